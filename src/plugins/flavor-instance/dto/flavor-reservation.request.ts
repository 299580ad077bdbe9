import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A count, as a number or (as the blazar CLI sends it) a numeric string. */
const COUNT = { oneOf: [{ type: 'integer' }, { type: 'string', pattern: '^\\s*\\d+\\s*$' }] };

/** A `flavor:instance` reservation in a lease request: `amount` servers of a flavor. */
export class FlavorReservationRequest {
  @ApiProperty({ enum: ['flavor:instance'] })
  resource_type!: 'flavor:instance';

  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'integer' }],
    description:
      'A Nova flavor the project can see (the blazar CLI sends a numeric id as a number)',
  })
  flavor_id!: string | number;

  @ApiProperty({ ...COUNT, description: 'How many servers' })
  amount!: number | string;

  @ApiPropertyOptional({
    oneOf: [{ type: 'boolean' }, { type: 'string' }, { type: 'null' }],
    description:
      'true: all on one host; false: each on its own; null (default): either. Blazar accepts only null',
  })
  affinity?: boolean | string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'Accepted and ignored, as Blazar',
  })
  resource_properties?: string | null;
}
