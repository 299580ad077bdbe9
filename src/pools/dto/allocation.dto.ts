import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ApiWireDate,
  INPUT_DATE_FORMATS as INPUT_DATE,
} from '../../common/dto/wire-date.decorator.js';

/** GET /v1/os-hosts/allocations and /{id}/allocation query: current and future by default. */
export class AllocationsQuery {
  @ApiPropertyOptional({ format: 'uuid', description: 'Only this lease (past ones too)' })
  lease_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only this reservation (past ones too)' })
  reservation_id?: string;

  @ApiPropertyOptional({ description: `Ending after this. ${INPUT_DATE}` })
  start?: string;

  @ApiPropertyOptional({ description: `Starting before this. ${INPUT_DATE}` })
  end?: string;
}

export class AllocatedReservation {
  @ApiProperty({
    type: 'string',
    format: 'uuid',
    nullable: true,
    description: "Null for another project's reservation (an anonymous reserved slot)",
  })
  id!: string | null;

  @ApiProperty({
    type: 'string',
    format: 'uuid',
    nullable: true,
    description: "Null for another project's lease",
  })
  lease_id!: string | null;

  @ApiWireDate()
  start_date!: string;

  @ApiWireDate()
  end_date!: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'An instance reservation: the slots it holds on this host',
  })
  slots?: number;
}

/** Blazar's allocation: a host and the reservations on it (whole host or slots). */
export class AllocationResponse {
  @ApiProperty({ pattern: '^[0-9]+$', description: 'The host id' })
  resource_id!: string;

  @ApiProperty({ description: "The host's name (a tenant may not be allowed to list hosts)" })
  hypervisor_hostname!: string;

  @ApiProperty({ type: [AllocatedReservation] })
  reservations!: AllocatedReservation[];
}

export class AllocationListBody {
  @ApiProperty({ type: [AllocationResponse] })
  allocations!: AllocationResponse[];
}

export class AllocationBody {
  @ApiProperty({ type: AllocationResponse })
  allocation!: AllocationResponse;
}
