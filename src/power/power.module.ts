import { Module } from '@nestjs/common';
import { HostPowerPort } from '../hosts/host-power.js';
import { HostsModule } from '../hosts/hosts.module.js';
import { PluginsModule } from '../plugins/plugins.module.js';
import { PoolsModule } from '../pools/pools.module.js';
import { PlanCandidates } from './plan-store-candidates.js';
import { PlanPages } from './plan-pages.js';
import { PlanRefresh } from './plan-refresh.js';
import { PlanStore } from './plan-store.js';
import { PowerAdmin } from './power-admin.js';
import { PowerController } from './power.controller.js';
import { PowerReport } from './power-report.js';
import { PowerRepository } from './power.repository.js';
import { PowerService } from './power.service.js';
import { PowerTransitions } from './power-transitions.js';
import { Provisioning } from './provisioning.js';

/**
 * The power plan and the provisioning lead time (docs/power.md): idle hosts of the
 * reservation pool powered off and on again in time, hosts prepared before a lease's
 * start, and what it does for admins and /metrics. Availability and the start's wait
 * for hosts that are not on live with the pools (PowerReadiness). It serves the hosts'
 * "always on" marks through their HostPowerPort.
 */
@Module({
  imports: [PoolsModule, PluginsModule, HostsModule],
  controllers: [PowerController],
  providers: [
    PlanCandidates,
    PlanPages,
    PlanRefresh,
    PlanStore,
    PowerAdmin,
    PowerReport,
    PowerRepository,
    PowerService,
    PowerTransitions,
    Provisioning,
  ],
})
export class PowerModule {
  constructor(port: HostPowerPort, admin: PowerAdmin) {
    port.register(admin);
  }
}
