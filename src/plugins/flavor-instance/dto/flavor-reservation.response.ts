import { ApiProperty, IntersectionType, OmitType } from '@nestjs/swagger';
import { ReservationResponse } from '../../dto/reservation.response.js';
import { InstanceReservationFields } from '../../virtual-instance/dto/instance-reservation.response.js';

/** What a `flavor:instance` reservation adds to the reservation object (its `present`). */
export class FlavorReservationFields extends OmitType(InstanceReservationFields, [
  'server_id',
  'resource_properties',
  'vcpus',
  'memory_mb',
  'disk_gb',
] as const) {
  @ApiProperty({ type: 'integer', description: "The source flavor's vCPUs" })
  vcpus!: number;

  @ApiProperty({ type: 'integer', description: "The source flavor's RAM (MB)" })
  memory_mb!: number;

  @ApiProperty({ type: 'integer', description: "The source flavor's root disk (GB)" })
  disk_gb!: number;

  @ApiProperty({
    description:
      'The source flavor as Nova showed it at create, extra specs included (JSON text, as Blazar)',
  })
  resource_properties!: string;
}

export class FlavorReservationResponse extends IntersectionType(
  ReservationResponse,
  FlavorReservationFields,
) {
  @ApiProperty({ enum: ['flavor:instance'] })
  override resource_type = 'flavor:instance' as const;
}
