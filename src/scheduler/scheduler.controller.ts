import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { requireAdmin } from '../common/auth/policy.js';
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
