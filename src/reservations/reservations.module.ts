import { Module } from '@nestjs/common';
import { EnforcementModule } from '../enforcement/enforcement.module.js';
import { PluginsModule } from '../plugins/plugins.module.js';
import { PoolsModule } from '../pools/pools.module.js';
import { ReservationActions } from './reservation-actions.js';
import { ReservationSync } from './reservation-sync.js';

@Module({
  imports: [EnforcementModule, PluginsModule, PoolsModule],
  providers: [ReservationActions, ReservationSync],
  exports: [ReservationActions, ReservationSync],
})
export class ReservationsModule {}
