import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiAdditionalProperties } from '../../common/dto/api-additional-properties.decorator.js';

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

/**
 * PUT /v1/os-hosts/{id}: inventory fields (the builtin driver's; Nova reports its own),
 * `reservable`, and any other key an extra capability with a string value. Checked by
 * hand (splitHostFields), so this class only documents the body.
 */
@ApiAdditionalProperties(CAPABILITY)
export class HostUpdateRequest {
  @ApiPropertyOptional(COUNT)
  vcpus?: number | string;

  @ApiPropertyOptional(COUNT)
  memory_mb?: number | string;

  @ApiPropertyOptional(COUNT)
  local_gb?: number | string;

  @ApiPropertyOptional(COUNT)
  hypervisor_version?: number | string;

  @ApiPropertyOptional(TEXT)
  hypervisor_type?: string;

  @ApiPropertyOptional({ type: 'string' })
  cpu_info?: string;

  @ApiPropertyOptional(TEXT)
  availability_zone?: string;

  @ApiPropertyOptional(TEXT)
  service_name?: string;

  @ApiPropertyOptional({ ...BOOLEAN, description: 'false takes the host out and heals' })
  reservable?: boolean | string;
}

/** POST /v1/os-hosts: the compute host's name and what PUT takes. */
@ApiAdditionalProperties(CAPABILITY)
export class HostCreateRequest extends HostUpdateRequest {
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'integer' }],
    description: 'The hypervisor hostname (`id` is taken too, as Blazar does)',
  })
  name!: string | number;
}
