import { ApiProperty } from '@nestjs/swagger';
import { IsDefined } from 'class-validator';

/**
 * POST /v1/floatingips: an address of an external network to reserve. Its format and
 * the network are checked by the service (Blazar's messages), so only presence here.
 */
export class FloatingIpCreateRequest {
  @ApiProperty({
    type: 'string',
    maxLength: 255,
    description: 'The Neutron network the address is on',
  })
  @IsDefined({ message: 'Missing parameter floating_network_id' })
  floating_network_id!: unknown;

  @ApiProperty({ type: 'string', description: 'An IPv4 or IPv6 address', example: '203.0.113.20' })
  @IsDefined({ message: 'Missing parameter floating_ip_address' })
  floating_ip_address!: unknown;
}
