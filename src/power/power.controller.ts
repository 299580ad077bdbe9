import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { PowerPlanBody } from './dto/power-plan.dto.js';
import { PowerPlanQuery } from './dto/power-plan.query.js';
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
      'Host-hours off (past and next 30 days) and hosts per power state; a page of hosts ' +
      'with their power state and planned transitions',
  })
  @ApiOkResponse({ type: PowerPlanBody, description: 'The power plan' })
  @ApiErrors(400, 401, 403, 503)
  async plan(@Query() query: PowerPlanQuery): Promise<PowerPlanBody> {
    return this.report.report(query);
  }
}
