import { Controller, Get, HttpCode, Req } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from './auth/auth.guard.js';
import { ApiErrors } from './dto/api-errors.decorator.js';
import { VersionsResponse } from './dto/versions.response.js';

/** Version discovery (Blazar answers 300 Multiple Choices); probes are in observability/. */
@Controller()
export class VersionsController {
  @Get(['', 'versions'])
  @Public()
  @HttpCode(300)
  @ApiOperation({ summary: 'The API versions (Blazar answers 300 Multiple Choices)' })
  @ApiSecurity({})
  @ApiResponse({ status: 300, type: VersionsResponse, description: 'The versions' })
  @ApiErrors()
  versions(@Req() req: Request): VersionsResponse {
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
