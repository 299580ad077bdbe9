import { Module } from '@nestjs/common';
import { ReservationActions } from './reservation-actions.js';
import { ReservationSync } from './reservation-sync.js';

@Module({
  providers: [ReservationActions, ReservationSync],
  exports: [ReservationActions, ReservationSync],
})
export class ReservationsModule {}
