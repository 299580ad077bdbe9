import { Body, Controller, Get, HttpCode, Post, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { requireAdmin } from '../common/auth/policy.js';
import { PoolsService } from './pools.service.js';
import { FilterRequest, SchedulerFilterService } from './scheduler-filter.service.js';

/** Called by the scheduler (a service user with the admin role) and by operators. */
@Controller('v1')
export class SchedulerController {
  constructor(
    private readonly filter: SchedulerFilterService,
    private readonly pools: PoolsService,
  ) {}

  @Post('scheduler/filter')
  @HttpCode(200)
  async run(@Caller() caller: Identity, @Body() body: FilterRequest, @Res() res: Response) {
    requireAdmin(caller, 'climate:scheduler:filter');
    res.type('application/json').send(await this.filter.filterJson(body ?? {}));
  }

  @Get('pools')
  async list(@Caller() caller: Identity) {
    requireAdmin(caller, 'climate:pools:get');
    return { pools: await this.pools.list() };
  }
}
