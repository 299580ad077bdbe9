import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { leftOut, Present, WellFormed } from '../../common/dto/rules.js';
import { ApiTimestamp } from '../../common/dto/wire-date.decorator.js';
import { BodyRules } from '../../common/validation.pipe.js';
import { booleanProblem } from '../host-fields.js';

/** GET /v1/os-hosts/properties query. */
export class HostPropertiesQuery {
  @ApiPropertyOptional({ description: 'True: with private and values', example: 'True' })
  detail?: string;

  @ApiPropertyOptional({ description: 'True: private properties too', example: 'True' })
  all?: string;
}

/** An extra-capability name in use; `private` and `values` with detail=True. */
export class HostPropertySummary {
  @ApiProperty()
  property!: string;

  @ApiPropertyOptional()
  private?: boolean;

  @ApiPropertyOptional({ type: [String], description: 'The values hosts have' })
  values?: string[];
}

export class HostPropertyListBody {
  @ApiProperty({ type: [HostPropertySummary] })
  resource_properties!: HostPropertySummary[];
}

/** PATCH /v1/os-hosts/properties/{name} body; other keys are ignored. */
@BodyRules({ otherKeys: 'ignored' })
export class HostPropertyUpdateRequest {
  @ApiProperty({
    oneOf: [{ type: 'boolean' }, { type: 'string' }],
    description: 'true or false: hide the property from non-admins',
  })
  @Present('private', leftOut)
  @WellFormed(
    (value) => booleanProblem('private', value)?.message ?? null,
    'MalformedParameter',
    leftOut,
  )
  private!: boolean | string;
}

/** Blazar's resource property object. */
export class HostPropertyResponse {
  // formatTimestamp is typed for null dates too; a created_at is never null.
  @ApiTimestamp()
  created_at!: string | null;

  @ApiTimestamp({ nullable: true })
  updated_at!: string | null;

  @ApiProperty({ pattern: '^[0-9]+$' })
  id!: string;

  @ApiProperty({ enum: ['physical:host'] })
  resource_type!: string;

  @ApiProperty()
  property_name!: string;

  @ApiProperty()
  private!: boolean;
}

export class HostPropertyBody {
  @ApiProperty({ type: HostPropertyResponse })
  resource_property!: HostPropertyResponse;
}
