import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { BEFORE_END, ON_END } from '../host-params.js';

/** A count, as a number or (as the blazar CLI sends it) a numeric string. */
const COUNT = { oneOf: [{ type: 'integer' }, { type: 'string', pattern: '^\\s*\\d+\\s*$' }] };

/** A `physical:host` reservation in a lease request: whole hosts, exclusively. */
export class HostReservationRequest {
  @ApiProperty({ enum: ['physical:host'] })
  resource_type!: 'physical:host';

  @ApiProperty({ ...COUNT, description: 'At least this many hosts (1 or more)' })
  min!: number | string;

  @ApiProperty({ ...COUNT, description: 'At most this many hosts (min or more)' })
  max!: number | string;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'Requirements on the inventory, e.g. [">=", "$vcpus", "8"]',
  })
  hypervisor_properties?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'Requirements on the extra capabilities, e.g. ["==", "$gpu", "True"]',
  })
  resource_properties?: string | null;

  @ApiPropertyOptional({ enum: BEFORE_END, default: 'default' })
  before_end?: (typeof BEFORE_END)[number];

  @ApiPropertyOptional({ enum: ON_END, default: 'release' })
  on_end?: (typeof ON_END)[number];

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'A topology level (TOPOLOGY_LEVELS) all hosts share',
  })
  affinity?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'A topology level no two hosts share',
  })
  anti_affinity?: string | null;

  @ApiPropertyOptional({
    oneOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }],
    description: 'Other projects that may use the hosts (a list, or comma-separated)',
  })
  extra_projects?: string[] | string;
}
