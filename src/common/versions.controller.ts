import { Controller, Get, HttpCode, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Public } from './auth/auth.guard.js';

/** Version discovery (Blazar answers 300 Multiple Choices); probes are in observability/. */
@Controller()
export class VersionsController {
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
}
