import { Controller, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiQuery } from '@nestjs/swagger';
import type { Response } from 'express';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { FilterRequestBody, FilterResponse, wantsReservation } from './dto/filter.dto.js';
import { FilterFields, FilterHosts } from './filter-body.js';
import { ReservedBoot } from './reserved-boot.js';
import { FilterRequest, SchedulerFilterService } from './scheduler-filter.service.js';

/** Called by the scheduler (a service user with the admin role) and by operators. */
@Controller('v1/scheduler')
export class SchedulerController {
  constructor(
    private readonly filter: SchedulerFilterService,
    private readonly reservedBoot: ReservedBoot,
  ) {}

  @Post('filter')
  @HttpCode(200)
  @Authorize('climate:scheduler:filter')
  @ApiOperation({ summary: 'Which hosts a boot may use (asked by the Nova filter)' })
  @ApiBody({ type: FilterRequestBody })
  @ApiQuery({
    name: 'explain',
    required: false,
    schema: { type: 'string', example: 'true' },
    description: 'True (true, 1, yes, on): also say why each other host does not pass',
  })
  // Written by hand (cached bytes), so the schema is declared here.
  @ApiOkResponse({ type: FilterResponse, description: 'The hosts that pass' })
  @ApiErrors(400, 401, 403, 409, 503)
  async run(
    @FilterFields() fields: FilterRequestBody,
    @FilterHosts() hosts: unknown,
    @Query('explain') explain: unknown,
    @Res() res: Response,
  ) {
    const request: FilterRequest = hosts === undefined ? fields : { ...fields, hosts };
    // A boot that asks for its own lease gets it first (one per instance, however often
    // Nova asks), then the hosts it may use until and from its start.
    if (wantsReservation(request)) {
      res.json(await this.reservedBoot.schedule(request, isTrue(explain)));
      return;
    }
    const json = await this.filter.filterJson(request, isTrue(explain));
    res.type('application/json').send(json);
  }
}

/** A query flag as the host routes read theirs: `explain=True`, `explain=1`, … */
function isTrue(value: unknown): boolean {
  return typeof value === 'string' && /^(1|true|yes|on)$/i.test(value.trim());
}
