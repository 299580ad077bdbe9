import { ApiProperty, IntersectionType } from '@nestjs/swagger';
import { ReservationResponse } from '../../dto/reservation.response.js';

/** What a `virtual:floatingip` reservation adds to the reservation object (its `present`). */
export class FloatingIpReservationFields {
  @ApiProperty()
  network_id!: string;

  @ApiProperty({ type: 'integer', minimum: 1 })
  amount!: number;

  @ApiProperty({ type: [String] })
  required_floatingips!: string[];
}

/** The addresses it holds (its `describe`; beyond Blazar, which shows them nowhere). */
export class FloatingIpReservationDetails {
  @ApiProperty({
    type: [String],
    description: 'The allocated addresses; Neutron has them in the project while it is active',
  })
  floatingips!: string[];
}

export class FloatingIpReservationResponse extends IntersectionType(
  ReservationResponse,
  FloatingIpReservationFields,
  FloatingIpReservationDetails,
) {
  @ApiProperty({ enum: ['virtual:floatingip'] })
  override resource_type = 'virtual:floatingip' as const;
}
