import { Controller, Get } from '@nestjs/common';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { requireAdmin } from '../common/auth/policy.js';
import { PoolsService } from './pools.service.js';

@Controller('v1')
export class PoolsController {
  constructor(private readonly pools: PoolsService) {}

  @Get('pools')
  async list(@Caller() caller: Identity) {
    requireAdmin(caller, 'climate:pools:get');
    return { pools: await this.pools.list() };
  }
}
