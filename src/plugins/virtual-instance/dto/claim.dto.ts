import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** POST /v1/reservations/{id}/claims body (checked by hand in ClaimsService). */
export class ClaimRequest {
  @ApiProperty({ maxLength: 255, description: 'The server taking a slot' })
  server_id!: string;

  @ApiPropertyOptional({ description: 'A slot on this host, else the fullest host with room' })
  host?: string;
}

/** A server's claim on a slot of an active `virtual:instance` reservation. */
export class ClaimResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty({ format: 'uuid' })
  reservation_id!: string;

  @ApiProperty()
  server_id!: string;

  @ApiProperty({ description: 'The host the slot is on' })
  host!: string;

  @ApiProperty({
    type: [String],
    description: 'Other hosts with a free slot (at most MAX_ALTERNATES)',
  })
  alternates!: string[];
}

export class ClaimBody {
  @ApiProperty({ type: ClaimResponse })
  claim!: ClaimResponse;
}
