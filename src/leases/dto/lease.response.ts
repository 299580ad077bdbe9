import { ApiExtraModels, ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { ApiTimestamp, ApiWireDate } from '../../common/dto/wire-date.decorator.js';
import { EVENT_STATUSES, EVENT_TYPES } from '../../model/event-status.js';
import { RESOURCE_TYPES } from '../../plugins/plugin-list.js';
import type { ReservationResponse } from '../../plugins/dto/reservation.response.js';
import { LEASE_STATUSES } from '../../model/lease-status.js';

export class LeaseEventResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ format: 'uuid' })
  lease_id!: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: `${EVENT_TYPES.join(', ')}; or, for a user-defined event (stored, never run), what it was given`,
  })
  event_type!: string | null;

  @ApiWireDate({ nullable: true, description: 'Null only for a user-defined event given none' })
  time!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: `${EVENT_STATUSES.join(', ')}; or, for a user-defined event, what it was given`,
  })
  status!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'Why the last attempt failed, while it is retried (beyond Blazar)',
  })
  last_error!: string | null;

  // formatTimestamp is typed for null dates too; a created_at is never null.
  @ApiTimestamp()
  created_at!: string | null;

  @ApiTimestamp({ nullable: true })
  updated_at!: string | null;
}

/** Each resource type's reservation, from the plugin list. */
const RESERVATIONS = RESOURCE_TYPES.map((t) => t.schemas.response);

/** Blazar's lease object. */
@ApiExtraModels(...RESERVATIONS)
export class LeaseResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ maxLength: 255 })
  name!: string;

  @ApiWireDate()
  start_date!: string;

  @ApiWireDate()
  end_date!: string;

  @ApiProperty({ enum: LEASE_STATUSES })
  status!: (typeof LEASE_STATUSES)[number];

  @ApiProperty({ description: 'A reservation misses resources healing could not replace' })
  degraded!: boolean;

  @ApiProperty()
  user_id!: string;

  @ApiProperty()
  project_id!: string;

  @ApiProperty({ type: 'string', nullable: true, description: 'The Keystone trust, if any' })
  trust_id!: string | null;

  // formatTimestamp is typed for null dates too; a created_at is never null.
  @ApiTimestamp()
  created_at!: string | null;

  @ApiTimestamp({ nullable: true })
  updated_at!: string | null;

  @ApiProperty({
    type: 'array',
    items: {
      type: 'object',
      oneOf: RESERVATIONS.map((schema) => ({ $ref: getSchemaPath(schema) })),
      discriminator: { propertyName: 'resource_type' },
    },
    description: 'One schema per resource type, told apart by resource_type',
  })
  reservations!: ReservationResponse[];

  @ApiProperty({ type: [LeaseEventResponse] })
  events!: LeaseEventResponse[];
}

export class LeaseBody {
  @ApiProperty({ type: LeaseResponse })
  lease!: LeaseResponse;
}

export class LeaseListBody {
  @ApiProperty({ type: [LeaseResponse] })
  leases!: LeaseResponse[];
}
