import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiAdditionalProperties } from '../../common/dto/api-additional-properties.decorator.js';
import type { FilterRequest } from '../scheduler-filter.service.js';
import type { FilterAnswer } from '../../plugins/scheduling.js';

const STRINGS = { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] };

/** Nova's scheduler hints; a boot with `reserved` asks for its own lease (`lease_params`). */
@ApiAdditionalProperties(true)
class FilterHints {
  @ApiPropertyOptional({ ...STRINGS, description: 'The reservation(s) the boot is for' })
  reservation?: string | string[];

  @ApiPropertyOptional({
    oneOf: [{ type: 'boolean' }, { type: 'string' }],
    description: 'True: make a lease for this boot from lease_params',
  })
  reserved?: boolean | string;

  @ApiPropertyOptional({
    oneOf: [{ type: 'string' }, { type: 'object' }],
    description: 'JSON {"name", "start", "end", "before_end"?} of the lease to make',
  })
  lease_params?: string | Record<string, string>;
}

/**
 * POST /v1/scheduler/filter body, what Climate's Nova filter sends. Checked by hand
 * (SchedulerFilterService), so this class only documents it.
 */
export class FilterRequestBody implements FilterRequest {
  @ApiProperty({ description: 'The project booting' })
  project_id!: string;

  @ApiPropertyOptional({
    oneOf: [...STRINGS.oneOf, { type: 'null' }],
    description:
      'Candidate host names; absent or null for every host. The body may be up to 16 MB here',
  })
  hosts?: string | string[] | null;

  @ApiPropertyOptional({ type: 'string', nullable: true })
  user_id?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'The server being scheduled',
  })
  instance_uuid?: string | null;

  @ApiPropertyOptional({ type: 'integer' })
  num_instances?: number;

  @ApiPropertyOptional({ type: FilterHints })
  hints?: FilterHints;

  @ApiPropertyOptional({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: "The flavor's extra specs (an instance reservation's flavor names it)",
  })
  flavor_extra_specs?: Record<string, unknown> | null;
}

/** The hosts that pass, in the order asked; with `explain=true`, why each other one does not. */
export class FilterResponse implements FilterAnswer {
  @ApiProperty({ type: [String], description: 'The hosts that pass' })
  hosts!: string[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'Only with explain=true: host name → why it does not pass',
  })
  rejected?: Record<string, string>;
}
