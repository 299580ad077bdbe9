import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import type { Response } from 'express';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { requireAdmin } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { FilterRequestBody, FilterResponse } from './dto/filter.dto.js';
import { ReservedBoot, wantsReservation } from './reserved-boot.js';
import { FilterRequest, SchedulerFilterService } from './scheduler-filter.service.js';

/** Called by the scheduler (a service user with the admin role) and by operators. */
@Controller('v1')
export class SchedulerController {
  constructor(
    private readonly filter: SchedulerFilterService,
    private readonly reservedBoot: ReservedBoot,
  ) {}

  @Post('scheduler/filter')
  @HttpCode(200)
  @ApiOperation({ summary: 'Which hosts a boot may use (asked by the Nova filter)' })
  @ApiBody({ type: FilterRequestBody })
  // Written by hand (cached bytes), so the schema is declared here.
  @ApiOkResponse({ type: FilterResponse, description: 'The verdict per host' })
  @ApiErrors(400, 401, 403, 409, 503)
  async run(@Caller() caller: Identity, @Body() body: FilterRequest, @Res() res: Response) {
    requireAdmin(caller, 'climate:scheduler:filter');
    const request = body ?? {};
    // A boot that asks for its own lease gets it first (one per instance, however often
    // Nova asks); the hints that asked are not a reservation hint.
    let hints = request.hints;
    if (wantsReservation(request)) {
      await this.reservedBoot.lease(request);
      hints = Object.fromEntries(
        Object.entries(hints as Record<string, unknown>).filter(
          ([k]) => k !== 'reserved' && k !== 'lease_params',
        ),
      );
    }
    // A server whose lease has started goes to its slot's host (the instance plugin's
    // scheduling rule), so the boot that made a lease for now lands on it.
    res.type('application/json').send(await this.filter.filterJson({ ...request, hints }));
  }
}
