import { Module } from '@nestjs/common';
import { ProjectLimitsService } from './project-limits.service.js';
import { UsageEnforcement } from './usage-enforcement.service.js';

/** Usage limits and the external service: the lease use cases and the reservation actions import it. */
@Module({
  providers: [UsageEnforcement, ProjectLimitsService],
  exports: [UsageEnforcement, ProjectLimitsService],
})
export class EnforcementModule {}
