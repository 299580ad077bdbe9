import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ApiWireDate,
  INPUT_DATE_FORMATS as INPUT_DATE,
} from '../../common/dto/wire-date.decorator.js';

/** Which hosts count: the requirement language of reservations. */
export class HostRequirementsQuery {
  @ApiPropertyOptional({ description: 'Requirements on the inventory (JSON query text)' })
  hypervisor_properties?: string;

  @ApiPropertyOptional({ description: 'Requirements on the extra capabilities' })
  resource_properties?: string;
}

/** GET /v1/os-hosts/capacity query. */
export class CapacityQuery extends HostRequirementsQuery {
  @ApiProperty({ description: INPUT_DATE })
  start!: string;

  @ApiProperty({ description: `Later than start. ${INPUT_DATE}` })
  end!: string;

  @ApiPropertyOptional({
    default: '1h',
    example: '30m',
    description: 'A duration such as 90s, 30m, 2h or 1d; at most 2000 steps',
  })
  step?: string;
}

/** Matching hosts over one step of the plan. */
export class CapacityStep {
  @ApiWireDate()
  start_date!: string;

  @ApiWireDate()
  end_date!: string;

  @ApiProperty({ type: 'integer', description: 'Matching hosts in the reservation pool' })
  total!: number;

  @ApiProperty({ type: 'integer', description: 'Of those, reserved at some instant of the step' })
  reserved!: number;

  @ApiProperty({ type: 'integer' })
  free!: number;

  @ApiProperty({ type: 'integer', description: 'Matching hosts outside the reservation pool' })
  out_of_pool!: number;
}

export class CapacityBody {
  @ApiProperty({ type: [CapacityStep] })
  capacity!: CapacityStep[];
}

/** GET /v1/os-hosts/availability query: the earliest windows with `count` free hosts. */
export class AvailabilityQuery extends HostRequirementsQuery {
  @ApiProperty({ example: '2h', description: 'How long the hosts are wanted: 90s, 30m, 2h, 1d, …' })
  duration!: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100_000, default: 1 })
  count?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 5 })
  limit?: number;

  @ApiPropertyOptional({ description: `Not before this (default now). ${INPUT_DATE}` })
  start?: string;
}

export class AvailabilityWindow {
  @ApiWireDate()
  start_date!: string;

  @ApiWireDate()
  end_date!: string;

  @ApiProperty({ type: 'integer' })
  free_hosts!: number;
}

export class AvailabilityBody {
  @ApiProperty({ type: [AvailabilityWindow] })
  availability!: AvailabilityWindow[];
}
