import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ApiWireDate,
  INPUT_DATE_FORMATS as INPUT_DATE,
} from '../../../common/dto/wire-date.decorator.js';

/** GET /v1/instances/availability query: the earliest windows for `amount` slots. */
export class SlotAvailabilityQuery {
  @ApiProperty({ example: '2h', description: 'How long the slots are wanted: 90s, 30m, 2h, 1d, …' })
  duration!: string;

  @ApiProperty({ type: 'integer', minimum: 1 })
  amount!: number;

  @ApiProperty({ type: 'integer', minimum: 1 })
  vcpus!: number;

  @ApiProperty({ type: 'integer', minimum: 1 })
  memory_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  disk_gb!: number;

  @ApiPropertyOptional({
    enum: ['true', 'false', 'none'],
    description: 'true: all on one host; false: each on its own host; none (default): anywhere',
  })
  affinity?: string;

  @ApiPropertyOptional({ description: 'Requirements on the hosts (the requirement language)' })
  resource_properties?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 5 })
  limit?: number;

  @ApiPropertyOptional({ description: `Not before this (default now). ${INPUT_DATE}` })
  start?: string;
}

export class SlotWindow {
  @ApiWireDate()
  start_date!: string;

  @ApiWireDate()
  end_date!: string;
}

export class SlotAvailabilityBody {
  @ApiProperty({ type: [SlotWindow], description: 'Earliest first' })
  availability!: SlotWindow[];
}
