import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { leftOut, Present, WellFormed } from '../../../common/dto/rules.js';
import { lengthProblem } from '../../../common/storable.js';
import { BodyRules } from '../../../common/validation.pipe.js';
import { MAX_SERVER_ID } from '../instance-params.js';

/** POST /v1/reservations/{id}/claims body; other keys are ignored. */
@BodyRules({ otherKeys: 'ignored' })
export class ClaimRequest {
  @ApiProperty({ maxLength: 255, description: 'The server taking a slot' })
  @Present('server_id')
  @WellFormed((id) =>
    typeof id === 'string'
      ? (lengthProblem('server_id', id, MAX_SERVER_ID)?.message ?? null)
      : 'Malformed parameter server_id',
  )
  server_id!: string;

  @ApiPropertyOptional({ description: 'A slot on this host, else the fullest host with room' })
  @WellFormed(
    (host) => (typeof host === 'string' ? null : 'Malformed parameter host'),
    'MalformedParameter',
    leftOut,
  )
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
