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
    const slotHosts = await this.reservedBoot.slotHosts(request.instance_uuid);
    if (slotHosts === null && !wantsReservation(request)) {
      res.type('application/json').send(await this.filter.filterJson(request));
      return;
    }
    const answer = await this.filter.filter({ ...request, hints });
    res.type('application/json').send(slotHosts === null ? answer : onlyOn(answer, slotHosts));
  }
}

/** A server whose lease runs now goes to its slot's host, whatever else would pass. */
function onlyOn(
  answer: { hosts: string[]; rejected: Record<string, string> },
  slotHosts: string[],
): { hosts: string[]; rejected: Record<string, string> } {
  const rejected = { ...answer.rejected };
  const hosts = answer.hosts.filter((h) => slotHosts.includes(h));
  for (const h of answer.hosts)
    if (!slotHosts.includes(h)) rejected[h] = 'not the host of its slot';
  for (const h of slotHosts) {
    if (h in rejected) {
      delete rejected[h];
      hosts.push(h);
    }
  }
  return { hosts, rejected };
}
