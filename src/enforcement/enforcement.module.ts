import { Module } from '@nestjs/common';
import { PluginsModule } from '../plugins/plugins.module.js';
import { LeaseWires } from './lease-wires.js';
import { ProjectLimitsService } from './project-limits.service.js';
import { UsageEnforcement } from './usage-enforcement.service.js';

/**
 * Usage limits and the external service: the lease use cases and the reservation actions
 * import it. The lease use cases fill LeaseWires, the bodies it sends.
 */
@Module({
  imports: [PluginsModule],
  providers: [UsageEnforcement, ProjectLimitsService, LeaseWires],
  exports: [UsageEnforcement, ProjectLimitsService, LeaseWires],
})
export class EnforcementModule {}
