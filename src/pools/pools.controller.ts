import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation } from '@nestjs/swagger';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { PoolListBody } from './dto/pool.dto.js';
import { PoolsService } from './pools.service.js';

@Controller('v1')
export class PoolsController {
  constructor(private readonly pools: PoolsService) {}

  @Get('pools')
  @Authorize('climate:pools:get')
  @ApiOperation({ summary: 'List the pools and topology aggregates with their hosts' })
  @ApiOkResponse({ type: PoolListBody, description: 'The pools' })
  @ApiErrors(401, 403, 503)
  async list() {
    return { pools: await this.pools.list() };
  }
}
