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
import { LeaseDeleter } from './lease-deleter.js';
import { LeasesService } from './leases.service.js';

const etag = (version: number) => `"${version}"`;

@Controller('v1/leases')
export class LeasesController {
  constructor(
    private readonly leases: LeasesService,
    private readonly deleter: LeaseDeleter,
  ) {}

  /** Streamed a page at a time: a list of every lease stays in bounded memory. */
  @Get()
  async list(
    @Caller() caller: Identity,
    @Query() query: ListLeasesQuery,
    @Res() res: Response,
  ): Promise<void> {
    const pages = this.leases.pages(caller, query);
    // The first page before the status: bad parameters are still a clean 4xx.
    let page = await pages.next();
    res.status(200).type('application/json');
    let separator = '';
    res.write('{"leases":[');
    try {
      while (page.done !== true) {
        for (const lease of page.value) {
          if (!res.write(separator + JSON.stringify(lease))) {
            // Wait for the client to take it, or stop if it went away.
            await drained(res);
            if (res.destroyed) return;
          }
          separator = ',';
        }
        page = await pages.next();
      }
    } catch (error) {
      // Half a list has gone out: cut the connection so the client sees it failed.
      res.destroy(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    res.end(']}');
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
    await this.deleter.delete(caller, id, ifMatch);
  }
}

/** Resolves when the response can take more, or when the client has gone. */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
