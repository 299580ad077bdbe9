import { Module } from '@nestjs/common';
import { PluginsModule } from '../plugins/plugins.module.js';
import { ReservationActions } from './reservation-actions.js';

@Module({
  imports: [PluginsModule],
  providers: [ReservationActions],
  exports: [ReservationActions],
})
export class ReservationsModule {}
