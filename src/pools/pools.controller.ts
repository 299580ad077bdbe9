import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { PoolListBody } from './dto/pool.dto.js';
import { PoolsService } from './pools.service.js';

/** /v1/pools: the pools and topology aggregates (a host's moves are /v1/os-hosts routes). */
@Controller('v1/pools')
export class PoolsController {
  constructor(private readonly pools: PoolsService) {}

  @Get()
  @Authorize('climate:pools:get')
  @ApiOperation({ summary: 'List the pools and topology aggregates with their hosts' })
  @ApiOkResponse({ type: PoolListBody, description: 'The pools' })
  @ApiErrors(401, 403, 503)
  async list() {
    return { pools: await this.pools.list() };
  }
}
