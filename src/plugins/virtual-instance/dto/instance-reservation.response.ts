import { ApiProperty, ApiPropertyOptional, IntersectionType } from '@nestjs/swagger';
import { ReservationResponse } from '../../dto/reservation.response.js';

/** What a `virtual:instance` reservation adds to the reservation object (its `present`). */
export class InstanceReservationFields {
  @ApiProperty({ type: 'integer', minimum: 1, description: 'vCPUs of one instance slot' })
  vcpus!: number;

  @ApiProperty({ type: 'integer', minimum: 1 })
  memory_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  disk_gb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, description: 'How many slots' })
  amount!: number;

  @ApiProperty({
    type: 'boolean',
    nullable: true,
    description: 'true: all slots on one host; false: each on its own; null: either',
  })
  affinity!: boolean | null;

  @ApiProperty({ description: "Requirements on the hosts' extra capabilities (JSON query text)" })
  resource_properties!: string;

  @ApiProperty({ format: 'uuid', description: 'The flavor to boot into the reservation' })
  flavor_id!: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description:
      'The Nova server group to boot with (made with the lease, as Blazar); null without affinity, or after an update of affinity until the start',
  })
  server_group_id!: string | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description:
      "The Nova aggregate's id (made with the lease, as Blazar); with the builtin driver Climate's own pool's, from the start",
  })
  aggregate_id!: number | null;

  @ApiPropertyOptional({ description: 'The existing server the reservation is for, if any' })
  server_id?: string;
}

/** A server's claim on one of the reservation's slots. */
export class SlotClaimResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty()
  server_id!: string;

  @ApiProperty({ description: 'The host the slot is on' })
  host!: string;
}

/** What a `virtual:instance` reservation adds from the database (its `describe`). */
export class InstanceReservationDetails {
  @ApiProperty({ type: [SlotClaimResponse] })
  claims!: SlotClaimResponse[];
}

export class InstanceReservationResponse extends IntersectionType(
  ReservationResponse,
  InstanceReservationFields,
  InstanceReservationDetails,
) {
  @ApiProperty({ enum: ['virtual:instance'] })
  override resource_type = 'virtual:instance' as const;
}
