import { Global, Module } from '@nestjs/common';
import { ProjectLimitsService } from './project-limits.service.js';
import { UsageEnforcement } from './usage-enforcement.service.js';

/** Global: the lease service and the manager's end actions both call it. */
@Global()
@Module({
  providers: [UsageEnforcement, ProjectLimitsService],
  exports: [UsageEnforcement, ProjectLimitsService],
})
export class EnforcementModule {}
