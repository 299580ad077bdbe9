import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A count, as a number or (as the blazar CLI sends it) a numeric string. */
const COUNT = { oneOf: [{ type: 'integer' }, { type: 'string', pattern: '^\\s*\\d+\\s*$' }] };

/**
 * A `virtual:instance` reservation in a lease request: `amount` slots of one size. With
 * `resource_id`, one slot for that existing (shelved) server, of its flavor's size.
 */
export class InstanceReservationRequest {
  @ApiProperty({ enum: ['virtual:instance'] })
  resource_type!: 'virtual:instance';

  @ApiPropertyOptional({ ...COUNT, description: 'vCPUs of a slot (required without resource_id)' })
  vcpus?: number | string;

  @ApiPropertyOptional({ ...COUNT, description: 'Required without resource_id' })
  memory_mb?: number | string;

  @ApiPropertyOptional({ ...COUNT, description: 'Required without resource_id' })
  disk_gb?: number | string;

  @ApiPropertyOptional({ ...COUNT, description: 'How many slots (required without resource_id)' })
  amount?: number | string;

  @ApiPropertyOptional({
    oneOf: [{ type: 'boolean' }, { type: 'string' }, { type: 'null' }],
    description: 'true, false or null (also "True", "False", "None")',
  })
  affinity?: boolean | string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: "Requirements on the hosts' extra capabilities",
  })
  resource_properties?: string | null;

  @ApiPropertyOptional({ description: 'An existing shelved server of the project to reserve' })
  resource_id?: string;
}
