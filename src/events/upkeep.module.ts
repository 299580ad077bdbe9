import { Module } from '@nestjs/common';
import { LeasesModule } from '../leases/leases.module.js';
import { PluginsModule } from '../plugins/plugins.module.js';
import { EvacuationPort } from '../pools/evacuation.js';
import { PoolsModule } from '../pools/pools.module.js';
import { HealingService } from './healing.service.js';
import { Maintenance } from './maintenance.service.js';
import { NovaListener } from './nova-listener.js';

/**
 * The manager's work beside the event runner: healing, the periodic upkeep and the Nova
 * listener, which dispatch to the plugins. Healing fills the pools' EvacuationPort: hosts
 * and pools evacuate a failing host through it.
 */
@Module({
  imports: [PoolsModule, PluginsModule, LeasesModule],
  providers: [HealingService, Maintenance, NovaListener],
})
export class UpkeepModule {
  constructor(evacuation: EvacuationPort, healing: HealingService) {
    evacuation.register(healing);
  }
}
