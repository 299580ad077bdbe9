import { Module } from '@nestjs/common';
import { EnforcementModule } from '../enforcement/enforcement.module.js';
import { ReservationActions } from './reservation-actions.js';
import { ReservationSync } from './reservation-sync.js';

@Module({
  imports: [EnforcementModule],
  providers: [ReservationActions, ReservationSync],
  exports: [ReservationActions, ReservationSync],
})
export class ReservationsModule {}
