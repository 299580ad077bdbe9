import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Put,
  Query,
  Res,
} from '@nestjs/common';
import type { Response } from 'express';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { checkKey } from './idempotency.js';
import { CreateLeaseDto, UpdateLeaseDto } from './dto/lease.dto.js';
import { ListLeasesQuery } from './dto/list-leases.query.js';
import { LeasesService } from './leases.service.js';

const etag = (version: number) => `"${version}"`;

@Controller('v1/leases')
export class LeasesController {
  constructor(private readonly leases: LeasesService) {}

  @Get()
  async list(@Caller() caller: Identity, @Query() query: ListLeasesQuery) {
    return { leases: await this.leases.list(caller, query) };
  }

  @Post()
  @HttpCode(201)
  async create(
    @Caller() caller: Identity,
    @Body() body: CreateLeaseDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    if (key !== undefined) checkKey(key);
    const result = await this.leases.create(caller, body, key);
    if (result.replayed) res.setHeader('Idempotent-Replayed', 'true');
    else res.setHeader('ETag', etag(result.version));
    return { lease: result.lease };
  }

  @Get(':id')
  async get(
    @Caller() caller: Identity,
    @Param('id') id: string,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { lease, version } = await this.leases.get(caller, id);
    res.setHeader('ETag', etag(version));
    return { lease };
  }

  @Put(':id')
  async update(
    @Caller() caller: Identity,
    @Param('id') id: string,
    @Body() body: UpdateLeaseDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { lease, version } = await this.leases.update(caller, id, body, ifMatch);
    res.setHeader('ETag', etag(version));
    return { lease };
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(
    @Caller() caller: Identity,
    @Param('id') id: string,
    @Headers('if-match') ifMatch: string | undefined,
  ): Promise<void> {
    await this.leases.delete(caller, id, ifMatch);
  }
}
