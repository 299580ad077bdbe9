import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { PowerPlanBody } from './dto/power-plan.dto.js';
import { PowerReport } from './power-report.js';

/**
 * The power plan (docs/power.md): what it does. Admin only. The "always on" mark is a
 * /v1/os-hosts route (HostsController), which PowerAdmin serves through HostPowerPort.
 */
@Controller('v1/power-plan')
export class PowerController {
  constructor(private readonly report: PowerReport) {}

  @Get()
  @Authorize('climate:power_plan:get')
  @ApiOperation({
    summary:
      "Each host's power state and planned transitions; host-hours off, past and next 30 days",
  })
  @ApiOkResponse({ type: PowerPlanBody, description: 'The power plan' })
  @ApiErrors(401, 403, 503)
  async plan(): Promise<PowerPlanBody> {
    return this.report.report();
  }
}
