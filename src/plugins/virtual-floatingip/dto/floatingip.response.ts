import { ApiProperty } from '@nestjs/swagger';
import { ApiTimestamp } from '../../../common/dto/wire-date.decorator.js';

/** Blazar's floating IP object. */
export class FloatingIpResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty()
  floating_network_id!: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The Neutron subnet it is in; null with COMPUTE_DRIVER=builtin (no Neutron)',
  })
  subnet_id!: string | null;

  @ApiProperty({ example: '203.0.113.20' })
  floating_ip_address!: string;

  @ApiProperty()
  reservable!: boolean;

  // formatTimestamp is typed for null dates too; a created_at is never null.
  @ApiTimestamp()
  created_at!: string | null;

  @ApiTimestamp({ nullable: true })
  updated_at!: string | null;
}

export class FloatingIpBody {
  @ApiProperty({ type: FloatingIpResponse })
  floatingip!: FloatingIpResponse;
}

export class FloatingIpListBody {
  @ApiProperty({ type: [FloatingIpResponse] })
  floatingips!: FloatingIpResponse[];
}
