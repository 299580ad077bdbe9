import { Module } from '@nestjs/common';
import { ReservationActions } from './reservation-actions.js';

@Module({
  providers: [ReservationActions],
  exports: [ReservationActions],
})
export class ReservationsModule {}
