import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, ValidateIf } from 'class-validator';
import { WellFormed } from '../../common/dto/rules.js';
import { BodyRules } from '../../common/validation.pipe.js';
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

/** The hints of a boot that asks for its own lease: `reserved=True` and `lease_params`. */
export function wantsReservation(body: FilterRequest): boolean {
  const hints = body.hints as Record<string, unknown> | undefined;
  const reserved = hints?.reserved;
  return typeof reserved === 'string' ? /^(true|1|yes)$/i.test(reserved) : reserved === true;
}

/** A name or a list of names, as `hosts` and `hints.reservation` take them. */
export function isNames(value: unknown): value is string | string[] {
  const list = typeof value === 'string' ? [value] : value;
  return Array.isArray(list) && list.every((v) => typeof v === 'string');
}

const nullish = (value: unknown) => value === undefined || value === null;

const isObject = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function hintsProblem(hints: unknown): string | null {
  if (!isObject(hints)) return 'hints must be an object';
  const { reservation } = hints as { reservation?: unknown };
  return reservation === undefined || isNames(reservation)
    ? null
    : 'hints.reservation must be a string or a list of strings';
}

/**
 * POST /v1/scheduler/filter body, what Climate's Nova filter sends; other keys are
 * ignored. `hosts` is taken apart from the rest (FilterHosts, filter-body.ts): the list
 * may name the whole fleet, which the pipe would copy, so SchedulerFilterService checks it.
 */
@BodyRules({ otherKeys: 'ignored', none: 'empty' })
export class FilterRequestBody implements FilterRequest {
  @ApiProperty({ description: 'The project booting' })
  // A reserved boot's project is checked with its instance (ReservedBoot).
  @ValidateIf((body: FilterRequest) => !wantsReservation(body))
  @WellFormed(
    (id) => (typeof id === 'string' && id !== '' ? null : 'Missing parameter project_id'),
    'MissingParameter',
    () => false,
  )
  project_id!: string;

  @ApiPropertyOptional({
    oneOf: [...STRINGS.oneOf, { type: 'null' }],
    description:
      'Candidate host names; absent or null for every host. The body may be up to 16 MB here',
  })
  hosts?: string | string[] | null;

  @ApiPropertyOptional({ type: 'string', nullable: true })
  @Allow()
  user_id?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    description: 'The server being scheduled',
  })
  @Allow()
  instance_uuid?: string | null;

  @ApiPropertyOptional({ type: 'integer' })
  @Allow()
  num_instances?: number;

  @ApiPropertyOptional({ type: FilterHints })
  @WellFormed(hintsProblem, 'InvalidInput', nullish)
  hints?: FilterHints;

  @ApiPropertyOptional({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: "The flavor's extra specs (an instance reservation's flavor names it)",
  })
  @WellFormed(
    (specs) => (isObject(specs) ? null : 'flavor_extra_specs must be an object'),
    'InvalidInput',
    nullish,
  )
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
