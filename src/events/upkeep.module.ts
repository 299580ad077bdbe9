import { Global, Module } from '@nestjs/common';
import { EVACUATION } from '../pools/evacuation.js';
import { HealingService } from './healing.service.js';
import { Maintenance } from './maintenance.service.js';
import { NovaListener } from './nova-listener.js';

/**
 * The manager's work beside the event runner: healing, the periodic upkeep and the Nova
 * listener, which dispatch to the plugins. Global: hosts and pools evacuate a failing host
 * through the EVACUATION token.
 */
@Global()
@Module({
  providers: [
    HealingService,
    { provide: EVACUATION, useExisting: HealingService },
    Maintenance,
    NovaListener,
  ],
  exports: [EVACUATION],
})
export class UpkeepModule {}
