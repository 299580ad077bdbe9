import { Body, Controller, Delete, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiNoContentResponse, ApiOperation } from '@nestjs/swagger';
import { Caller } from '../../common/auth/caller.decorator.js';
import type { Identity } from '../../common/auth/identity.js';
import { Authorize } from '../../common/auth/policy.js';
import { ApiErrors } from '../../common/dto/api-errors.decorator.js';
import { ClaimsService } from './claims.service.js';
import { ClaimBody, ClaimRequest } from './dto/claim.dto.js';

/** Claims of instance slots by servers being scheduled into a reservation. */
@Controller('v1')
export class ClaimsController {
  constructor(private readonly claims: ClaimsService) {}

  @Post('reservations/:id/claims')
  @HttpCode(201)
  @Authorize('climate:claims:post')
  @ApiOperation({ summary: 'Claim a slot of an active instance reservation for a server' })
  @ApiBody({ type: ClaimRequest })
  @ApiCreatedResponse({ type: ClaimBody, description: 'The claim' })
  @ApiErrors(400, 401, 403, 404, 409, 503)
  async claim(@Caller() caller: Identity, @Param('id') id: string, @Body() body: ClaimRequest) {
    return { claim: await this.claims.claim(caller, id, body) };
  }

  @Delete('claims/:id')
  @HttpCode(204)
  @Authorize('climate:claims:delete')
  @ApiOperation({ summary: "Release a server's claim on a slot" })
  @ApiNoContentResponse({ description: 'Released' })
  @ApiErrors(401, 403, 404, 409, 503)
  async release(@Caller() caller: Identity, @Param('id') id: string): Promise<void> {
    await this.claims.release(caller, id);
  }
}
