import { ApiProperty } from '@nestjs/swagger';
import { ApiAdditionalProperties } from '../../common/dto/api-additional-properties.decorator.js';
import { ApiTimestamp } from '../../common/dto/wire-date.decorator.js';

/** Blazar's host object: every column, plus the extra capabilities as top-level keys. */
@ApiAdditionalProperties({ type: 'string', description: 'An extra capability' })
export class HostResponse {
  /** Extra capabilities (string values), beside the columns. */
  [capability: string]: unknown;

  @ApiProperty({ pattern: '^[0-9]+$', example: '1' })
  id!: string;

  @ApiProperty()
  hypervisor_hostname!: string;

  @ApiProperty()
  hypervisor_type!: string;

  @ApiProperty({ type: 'integer' })
  hypervisor_version!: number;

  @ApiProperty({ type: 'integer' })
  vcpus!: number;

  @ApiProperty()
  cpu_info!: string;

  @ApiProperty({ type: 'integer' })
  memory_mb!: number;

  @ApiProperty({ type: 'integer' })
  local_gb!: number;

  @ApiProperty()
  service_name!: string;

  @ApiProperty()
  availability_zone!: string;

  @ApiProperty({ type: 'null', description: "Always null (Blazar's column, unused)" })
  status!: null;

  @ApiProperty({ description: 'false: failed or taken out; its reservations are healed' })
  reservable!: boolean;

  @ApiProperty({ type: 'string', nullable: true })
  trust_id!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The pool it is in: freepool, shared, recycle or a reservation id',
  })
  pool!: string | null;

  // formatTimestamp is typed for null dates too; a created_at is never null.
  @ApiTimestamp()
  created_at!: string | null;

  @ApiTimestamp({ nullable: true })
  updated_at!: string | null;
}

export class HostBody {
  @ApiProperty({ type: HostResponse })
  host!: HostResponse;
}

export class HostListBody {
  @ApiProperty({ type: [HostResponse] })
  hosts!: HostResponse[];
}
