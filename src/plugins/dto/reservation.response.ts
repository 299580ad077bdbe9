import { ApiProperty } from '@nestjs/swagger';
import { ApiTimestamp } from '../../common/dto/wire-date.decorator.js';
import type { ReservationStatus } from '../../model/reservation-status.js';

export const RESERVATION_STATUSES = [
  'pending',
  'active',
  'deleted',
  'error',
] as const satisfies readonly ReservationStatus[];

/**
 * The keys every reservation has on the wire; each resource type adds its own (its
 * plugin's `present` and `describe`), so the document has one schema per type.
 */
export class ReservationResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ format: 'uuid' })
  lease_id!: string;

  @ApiProperty({ description: "The plugin-side object's id, else the reservation's own" })
  resource_id!: string;

  @ApiProperty()
  resource_type!: string;

  @ApiProperty({ enum: RESERVATION_STATUSES })
  status!: (typeof RESERVATION_STATUSES)[number];

  @ApiProperty({ description: 'Some of its resources failed and could not be replaced' })
  missing_resources!: boolean;

  @ApiProperty({ description: 'Some of its resources were replaced by healing' })
  resources_changed!: boolean;

  // formatTimestamp is typed for null dates too; a created_at is never null.
  @ApiTimestamp()
  created_at!: string | null;

  @ApiTimestamp({ nullable: true })
  updated_at!: string | null;
}
