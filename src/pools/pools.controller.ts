import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { requireAdmin } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { PoolListBody } from './dto/pool.dto.js';
import { PoolsService } from './pools.service.js';

@Controller('v1')
export class PoolsController {
  constructor(private readonly pools: PoolsService) {}

  @Get('pools')
  @ApiOperation({ summary: 'List the pools and topology aggregates with their hosts' })
  @ApiOkResponse({ type: PoolListBody, description: 'The pools' })
  @ApiErrors(401, 403, 503)
  async list(@Caller() caller: Identity) {
    requireAdmin(caller, 'climate:pools:get');
    return { pools: await this.pools.list() };
  }
}
