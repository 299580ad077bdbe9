import { Transform } from 'class-transformer';
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
import { characters } from '../../common/storable.js';

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

/** POST /v1/leases. Dates stay raw here: parseInputDate gives Blazar's messages. */
export class CreateLeaseDto {
  @IsDefined(missing('name'))
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxChars(255, { message: 'name must be at most 255 characters' })
  name!: string;

  @IsDefined(missing('start_date'))
  start_date!: unknown;

  @IsDefined(missing('end_date'))
  end_date!: unknown;

  @IsOptional()
  before_end_date?: unknown;

  @IsOptional()
  @IsArray({ message: 'reservations must be a list' })
  @IsObject({ each: true, message: 'each reservation must be an object' })
  reservations?: Record<string, unknown>[];

  // Blazar's manager does `lease_values.pop("events", [])` and appends to it, so a null
  // list fails there with a 500; null here means what an absent list means: no events.
  @Transform(({ value }: { value: unknown }) => (value === null ? undefined : value))
  @IsOptional()
  @IsArray({ message: 'events must be a list' })
  events?: unknown[];
}

/** PUT /v1/leases/{id}: every field optional. */
export class UpdateLeaseDto {
  @IsOptional()
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxChars(255, { message: 'name must be at most 255 characters' })
  name?: string;

  @IsOptional()
  start_date?: unknown;

  @IsOptional()
  end_date?: unknown;

  @IsOptional()
  before_end_date?: unknown;

  @IsOptional()
  @IsArray({ message: 'reservations must be a list' })
  @IsObject({ each: true, message: 'each reservation must be an object' })
  reservations?: Record<string, unknown>[];
}
