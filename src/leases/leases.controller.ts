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
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { Caller } from '../common/auth/caller.decorator.js';
import type { Identity } from '../common/auth/identity.js';
import { Authorize } from '../common/auth/policy.js';
import { ApiErrors } from '../common/dto/api-errors.decorator.js';
import { checkKey } from './idempotency.js';
import { CreateLeaseDto, UpdateLeaseDto } from './dto/lease.dto.js';
import { LeaseBody, LeaseListBody } from './dto/lease.response.js';
import { ListLeasesQuery } from './dto/list-leases.query.js';
import { LeaseDeleter } from './lease-deleter.js';
import { LeasesService } from './leases.service.js';

const etag = (version: number) => `"${version}"`;

const ETAG = {
  ETag: { description: "The lease's version, for If-Match", schema: { type: 'string' } },
};
const IF_MATCH = {
  name: 'If-Match',
  required: false,
  description: 'Refuse (412) unless the lease is still at this version (its ETag)',
};

@Controller('v1/leases')
export class LeasesController {
  constructor(
    private readonly leases: LeasesService,
    private readonly deleter: LeaseDeleter,
  ) {}

  /** Streamed a page at a time: a list of every lease stays in bounded memory. */
  @Get()
  @Authorize('blazar:leases:get')
  @ApiOperation({ summary: 'List the leases the caller may see' })
  // Written by hand (streamed), so the schema is declared here.
  @ApiOkResponse({ type: LeaseListBody, description: 'The leases' })
  @ApiErrors(400, 401, 403, 404, 503)
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
  @Authorize('blazar:leases:post')
  @ApiOperation({ summary: 'Create a lease and reserve its resources' })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'A retry with the same key and body answers the first lease again (24 h)',
  })
  @ApiCreatedResponse({
    type: LeaseBody,
    description: 'The lease, its reservations and events',
    headers: {
      ...ETAG,
      'Idempotent-Replayed': {
        description: '"true" when this answers an earlier request with the same key',
        schema: { type: 'string', enum: ['true'] },
      },
    },
  })
  @ApiErrors(400, 401, 403, 409, 503, 504)
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
  @Authorize('blazar:leases:get')
  @ApiOperation({ summary: 'Show a lease' })
  @ApiOkResponse({ type: LeaseBody, headers: ETAG, description: 'The lease' })
  @ApiErrors(401, 403, 404, 503)
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
  @Authorize('blazar:leases:put')
  @ApiOperation({ summary: 'Update a lease: name, dates, reservation parameters' })
  @ApiHeader(IF_MATCH)
  @ApiOkResponse({ type: LeaseBody, headers: ETAG, description: 'The lease' })
  @ApiErrors(400, 401, 403, 404, 409, 412, 503, 504)
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
  @Authorize('blazar:leases:delete')
  @ApiOperation({ summary: 'Delete a lease; what its reservations hold goes back first' })
  @ApiHeader(IF_MATCH)
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors(401, 403, 404, 409, 412, 503)
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
