import { Module } from '@nestjs/common';
import { ClaimsController } from './claims.controller.js';
import { ClaimsService } from './claims.service.js';
import { ReservationActions } from './reservation-actions.js';

@Module({
  controllers: [ClaimsController],
  providers: [ReservationActions, ClaimsService],
  exports: [ReservationActions],
})
export class ReservationsModule {}
