import { Body, Controller, Delete, HttpCode, Param, Post } from '@nestjs/common';
import { Caller } from '../../common/auth/caller.decorator.js';
import type { Identity } from '../../common/auth/identity.js';
import { InvalidInput } from '../../common/errors.js';
import { ClaimsService } from './claims.service.js';

/** Claims of instance slots by servers being scheduled into a reservation. */
@Controller('v1')
export class ClaimsController {
  constructor(private readonly claims: ClaimsService) {}

  @Post('reservations/:id/claims')
  @HttpCode(201)
  async claim(@Caller() caller: Identity, @Param('id') id: string, @Body() body: unknown) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new InvalidInput('The body must be a JSON object');
    }
    return { claim: await this.claims.claim(caller, id, body as Record<string, unknown>) };
  }

  @Delete('claims/:id')
  @HttpCode(204)
  async release(@Caller() caller: Identity, @Param('id') id: string): Promise<void> {
    await this.claims.release(caller, id);
  }
}
