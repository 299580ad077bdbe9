import { ApiProperty, IntersectionType } from '@nestjs/swagger';
import { ReservationResponse } from '../../dto/reservation.response.js';
import { BEFORE_END, ON_END } from '../host-params.js';

/** What a `physical:host` reservation adds to the reservation object (its `present`). */
export class HostReservationFields {
  @ApiProperty({ type: 'integer', minimum: 1 })
  min!: number;

  @ApiProperty({ type: 'integer', minimum: 1 })
  max!: number;

  @ApiProperty({ description: "Requirements on the hosts' inventory (JSON query text)" })
  hypervisor_properties!: string;

  @ApiProperty({ description: "Requirements on the hosts' extra capabilities (JSON query text)" })
  resource_properties!: string;

  @ApiProperty({ enum: BEFORE_END })
  before_end!: (typeof BEFORE_END)[number];

  @ApiProperty({ enum: ON_END })
  on_end!: (typeof ON_END)[number];

  @ApiProperty({ type: 'string', nullable: true, description: 'A topology level all hosts share' })
  affinity!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'A topology level no two hosts share',
  })
  anti_affinity!: string | null;
}

export class HostReservationResponse extends IntersectionType(
  ReservationResponse,
  HostReservationFields,
) {
  @ApiProperty({ enum: ['physical:host'] })
  override resource_type = 'physical:host' as const;
}
