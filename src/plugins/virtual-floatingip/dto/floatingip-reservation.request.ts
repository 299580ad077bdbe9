import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A `virtual:floatingip` reservation in a lease request: addresses of one network. */
export class FloatingIpReservationRequest {
  @ApiProperty({ enum: ['virtual:floatingip'] })
  resource_type!: 'virtual:floatingip';

  @ApiProperty({ maxLength: 255, description: 'The external network the addresses are on' })
  network_id!: string;

  @ApiProperty({
    oneOf: [
      { type: 'integer', minimum: 1 },
      { type: 'string', pattern: '^\\s*\\d+\\s*$' },
    ],
    description: 'How many addresses',
  })
  amount!: number | string;

  @ApiPropertyOptional({
    type: [String],
    description: 'Registered addresses that must be among them (at most amount)',
  })
  required_floatingips?: string[];
}
