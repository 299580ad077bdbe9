import {
  IsArray,
  IsDefined,
  IsObject,
  IsOptional,
  IsString,
  MinLength,
  ValidateBy,
  type ValidationOptions,
} from 'class-validator';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { INPUT_DATE_FORMATS } from '../../common/dto/wire-date.decorator.js';
import { characters } from '../../common/storable.js';
import { RESOURCE_TYPES } from '../../plugins/plugin-list.js';

/** Each resource type's reservation request, from the plugin list. */
const RESERVATION_REQUESTS = RESOURCE_TYPES.map((t) => t.schemas.request);

const missing = (name: string) => ({ message: `Missing parameter ${name}` });

/**
 * At most `max` characters as PostgreSQL counts them for varchar(max) (code points;
 * class-validator's MaxLength does not count variation selectors, so it lets through
 * strings the column refuses).
 */
function MaxChars(max: number, options: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxChars',
      validator: { validate: (value) => typeof value === 'string' && characters(value) <= max },
    },
    options,
  );
}

const INPUT_DATE = {
  type: 'string',
  description: INPUT_DATE_FORMATS,
  example: '2030-01-01 12:00',
} as const;

const USER_EVENTS = {
  type: 'array',
  nullable: true,
  maxItems: 50,
  items: {
    type: 'object',
    properties: {
      event_type: { type: 'string', maxLength: 255 },
      event_date: {
        ...INPUT_DATE,
        description: `As the blazar CLI sends it. ${INPUT_DATE_FORMATS}`,
      },
      time: { ...INPUT_DATE, description: `Instead of event_date. ${INPUT_DATE_FORMATS}` },
      status: { type: 'string', maxLength: 255 },
    },
    additionalProperties: true,
  },
  description:
    "User-defined events: stored and shown among the lease's events, never run (as Blazar). Other keys are dropped, as Blazar drops them. In an update, the list replaces the lease's user-defined events ([] removes them).",
} as const;

const NAME = { maxLength: 255, minLength: 1, description: 'At most 255 characters' } as const;

/** POST /v1/leases. Dates stay raw here: parseInputDate gives Blazar's messages. */
@ApiExtraModels(...RESERVATION_REQUESTS)
export class CreateLeaseDto {
  @ApiProperty(NAME)
  @IsDefined(missing('name'))
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxChars(255, { message: 'name must be at most 255 characters' })
  name!: string;

  @ApiProperty(INPUT_DATE)
  @IsDefined(missing('start_date'))
  start_date!: unknown;

  @ApiProperty(INPUT_DATE)
  @IsDefined(missing('end_date'))
  end_date!: unknown;

  @ApiPropertyOptional({
    ...INPUT_DATE,
    description: `When the before_end action runs; by default MINUTES_BEFORE_END_LEASE before the end. ${INPUT_DATE.description}`,
  })
  @IsOptional()
  before_end_date?: unknown;

  @ApiPropertyOptional({
    type: 'array',
    items: {
      type: 'object',
      oneOf: RESERVATION_REQUESTS.map((schema) => ({ $ref: getSchemaPath(schema) })),
      discriminator: { propertyName: 'resource_type' },
    },
    description: 'One per resource; each resource type has its own parameters',
  })
  @IsOptional()
  @IsArray({ message: 'reservations must be a list' })
  @IsObject({ each: true, message: 'each reservation must be an object' })
  reservations?: Record<string, unknown>[];

  @ApiPropertyOptional(USER_EVENTS)
  @IsOptional()
  events?: unknown;
}

/** PUT /v1/leases/{id}: every field optional. */
export class UpdateLeaseDto {
  @ApiPropertyOptional(NAME)
  @IsOptional()
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxChars(255, { message: 'name must be at most 255 characters' })
  name?: string;

  @ApiPropertyOptional({
    ...INPUT_DATE,
    description: `Only before the lease starts. ${INPUT_DATE.description}`,
  })
  @IsOptional()
  start_date?: unknown;

  @ApiPropertyOptional(INPUT_DATE)
  @IsOptional()
  end_date?: unknown;

  @ApiPropertyOptional(INPUT_DATE)
  @IsOptional()
  before_end_date?: unknown;

  @ApiPropertyOptional({
    type: 'array',
    items: {
      type: 'object',
      required: ['id'],
      properties: { id: { type: 'string', format: 'uuid' } },
      additionalProperties: true,
    },
    description: "Changes to reservations by id: the parameters of the reservation's type",
  })
  @IsOptional()
  @IsArray({ message: 'reservations must be a list' })
  @IsObject({ each: true, message: 'each reservation must be an object' })
  reservations?: Record<string, unknown>[];

  @ApiPropertyOptional(USER_EVENTS)
  @IsOptional()
  events?: unknown;
}
