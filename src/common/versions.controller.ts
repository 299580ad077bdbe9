import { Controller, Get, HttpCode, Req, ServiceUnavailableException } from '@nestjs/common';
import type { Request } from 'express';
import { DataSource } from 'typeorm';
import { Public } from './auth/auth.guard.js';

/** Version discovery (Blazar answers 300 Multiple Choices) and the health probe. */
@Controller()
export class VersionsController {
  constructor(private readonly dataSource: DataSource) {}

  @Get(['', 'versions'])
  @Public()
  @HttpCode(300)
  versions(@Req() req: Request) {
    const base = `${req.protocol}://${req.get('host') ?? '127.0.0.1'}/`;
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
    try {
      await this.dataSource.query('SELECT 1');
      return { status: 'ok' };
    } catch {
      throw new ServiceUnavailableException('database unreachable');
    }
  }
}
