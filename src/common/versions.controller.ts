import { Controller, Get, HttpCode, Inject, Req } from '@nestjs/common';
import type { Request } from 'express';
import { DataSource } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { Public } from './auth/auth.guard.js';
import { ServiceUnavailable } from './errors.js';

/** Version discovery (Blazar answers 300 Multiple Choices) and the health probe. */
@Controller()
export class VersionsController {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get(['', 'versions'])
  @Public()
  @HttpCode(300)
  versions(@Req() req: Request) {
    const base = `${req.protocol}://${req.host ?? '127.0.0.1'}/`;
    return {
      versions: [
        {
          id: 'v1.0',
          status: 'CURRENT',
          links: [{ href: `${base}v1`, rel: 'self' }],
          min_version: '1.0',
          max_version: '1.0',
        },
      ],
    };
  }

  @Get('healthz')
  @Public()
  async health() {
    // Bounded even when a pooled connection hangs on a database that stopped answering.
    let timer: NodeJS.Timeout | undefined;
    const limit = this.config.databaseConnectTimeoutMs;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${limit} ms`)), limit);
    });
    try {
      await Promise.race([this.dataSource.query('SELECT 1'), timeout]);
      return { status: 'ok' };
    } catch (error) {
      throw new ServiceUnavailable(`The database does not answer: ${errorMessage(error)}`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
