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
    if (wantsReservation(request)) {
      // The server's own lease first; then it goes where that lease says.
      const { slotHosts } = await this.reservedBoot.lease(request);
      const hints = { ...(request.hints as Record<string, unknown>) };
      delete hints.reserved;
      delete hints.lease_params;
      const answer = await this.filter.filter({ ...request, hints });
      res.type('application/json').send(slotHosts === null ? answer : onlyOn(answer, slotHosts));
      return;
    }
    res.type('application/json').send(await this.filter.filterJson(request));
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
