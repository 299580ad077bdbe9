import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { ApiAdditionalProperties } from '../../common/dto/api-additional-properties.decorator.js';
import { absent, leftOut, Present, WellFormed } from '../../common/dto/rules.js';
import { lengthProblem } from '../../common/storable.js';
import { BodyRules } from '../../common/validation.pipe.js';
import { hostFieldProblem, MAX_HOST_TEXT } from '../host-fields.js';

/** A whole number, or a numeric string (`blazar host-create --extra vcpus=8`). */
const COUNT = { oneOf: [{ type: 'integer', minimum: 0 }, { type: 'string' }] };
const TEXT = { type: 'string', maxLength: 255 } as const;
const BOOLEAN = {
  oneOf: [
    { type: 'boolean' },
    { type: 'string', pattern: '^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$' },
  ],
};
const CAPABILITY = {
  oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }],
  description: 'An extra capability (letters, digits, _ . : -; at most 64 characters)',
};

/** The field's rule (hostFieldProblem, as splitHostFields applies it); left out, unchecked. */
const HostField = (key: string) =>
  WellFormed(
    (value) => hostFieldProblem(key, value)?.message ?? null,
    'MalformedParameter',
    leftOut,
  );

/**
 * PUT /v1/os-hosts/{id}: inventory fields (the builtin driver's; Nova reports its own),
 * `reservable`, and any other key an extra capability with a string value (kept as sent
 * once hostFieldProblem passes it). No body is no data.
 */
@BodyRules({ otherKeys: { check: hostFieldProblem }, none: 'empty' })
@ApiAdditionalProperties(CAPABILITY)
export class HostUpdateRequest {
  [capability: string]: unknown;

  @ApiPropertyOptional(COUNT)
  @HostField('vcpus')
  vcpus?: number | string;

  @ApiPropertyOptional(COUNT)
  @HostField('memory_mb')
  memory_mb?: number | string;

  @ApiPropertyOptional(COUNT)
  @HostField('local_gb')
  local_gb?: number | string;

  @ApiPropertyOptional(COUNT)
  @HostField('hypervisor_version')
  hypervisor_version?: number | string;

  @ApiPropertyOptional(TEXT)
  @HostField('hypervisor_type')
  hypervisor_type?: string;

  @ApiPropertyOptional({ type: 'string' })
  @HostField('cpu_info')
  cpu_info?: string;

  @ApiPropertyOptional(TEXT)
  @HostField('availability_zone')
  availability_zone?: string;

  @ApiPropertyOptional(TEXT)
  @HostField('service_name')
  service_name?: string;

  @ApiPropertyOptional({ ...BOOLEAN, description: 'false takes the host out and heals' })
  @HostField('reservable')
  reservable?: boolean | string;
}

/** The name a create gives: `name`, else `id`, as Blazar takes either. */
export function hostNameOf(body: { name?: unknown; id?: unknown }): unknown {
  return body.name ?? body.id;
}

function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string' && typeof name !== 'number') return 'Malformed parameter name';
  return lengthProblem('name', String(name), MAX_HOST_TEXT)?.message ?? null;
}

const noName = (_: unknown, body: object) => absent(hostNameOf(body));

/** POST /v1/os-hosts: the compute host's name and what PUT takes. */
@BodyRules({ otherKeys: { check: hostFieldProblem } })
@ApiAdditionalProperties(CAPABILITY)
export class HostCreateRequest extends HostUpdateRequest {
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'integer' }],
    description: 'The hypervisor hostname (`id` is taken too, as Blazar does)',
  })
  @Present('name', noName)
  @WellFormed((_, body) => nameProblem(hostNameOf(body)), 'MalformedParameter', noName)
  name!: string | number;

  /** Blazar's other name for `name`. */
  @Allow()
  id?: string | number;
}
