import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { InvalidInput, MissingParameter } from '../common/errors.js';
import { toBoolean } from '../hosts/host-fields.js';
import { HostPowerBody, HostPowerRequest, PowerPlanBody } from './dto/power-plan.dto.js';
import { PowerPlanQuery } from './dto/power-plan.query.js';
import { PowerAdmin } from './power-admin.js';
import { PowerReport } from './power-report.js';

/** The power plan (docs/power.md): what it does, and the admin's "always on" mark. Admin only. */
@Controller('v1')
export class PowerController {
  constructor(
    private readonly report: PowerReport,
    private readonly admin: PowerAdmin,
  ) {}

  @Get('power-plan')
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

  @Put('os-hosts/:id/power')
  @Authorize('climate:oshosts:power')
  @ApiOperation({ summary: 'Mark a host always on (never powered off by the plan), or not' })
  @ApiBody({ type: HostPowerRequest })
  @ApiOkResponse({ type: HostPowerBody, description: "The host's power" })
  @ApiErrors(400, 401, 403, 404, 503)
  async setPower(@Param('id') id: string, @Body() body: unknown): Promise<HostPowerBody> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new InvalidInput('The body must be a JSON object');
    }
    const { always_on: alwaysOn, ...rest } = body as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new InvalidInput(`Unknown parameter ${unknown.join(', ')}`);
    if (alwaysOn === undefined) throw new MissingParameter('always_on');
    return { host: await this.admin.setAlwaysOn(id, toBoolean('always_on', alwaysOn)) };
  }
}
