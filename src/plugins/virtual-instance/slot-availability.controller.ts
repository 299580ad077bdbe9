import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery } from '@nestjs/swagger';
import { Authorize } from '../../common/auth/policy.js';
import { ApiErrors } from '../../common/dto/api-errors.decorator.js';
import { SlotAvailabilityBody, SlotAvailabilityQuery } from './dto/slot-availability.dto.js';
import { SlotAvailability } from './slot-availability.js';

/** When instance slots of a size are free: windows only, no lease, project or host. */
@Controller('v1/instances')
export class SlotAvailabilityController {
  constructor(private readonly availability: SlotAvailability) {}

  @Get('availability')
  @Authorize('climate:instances:availability:get')
  @ApiOperation({ summary: 'The earliest windows where instance slots of a size fit' })
  @ApiQuery({ type: SlotAvailabilityQuery })
  @ApiOkResponse({ type: SlotAvailabilityBody, description: 'The windows, earliest first' })
  @ApiErrors(400, 401, 403, 503)
  async windows(@Query() query: Record<string, string>) {
    return this.availability.windows(query);
  }
}
