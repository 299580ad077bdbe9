import {
  IsArray,
  IsDefined,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  MinLength,
} from 'class-validator';

const missing = (name: string) => ({ message: `Missing parameter ${name}` });

/** POST /v1/leases. Dates stay raw here: parseInputDate gives Blazar's messages. */
export class CreateLeaseDto {
  @IsDefined(missing('name'))
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxLength(255, { message: 'name must be at most 255 characters' })
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

  @IsOptional()
  @IsArray({ message: 'events must be a list' })
  events?: unknown[];
}

/** PUT /v1/leases/{id}: every field optional. */
export class UpdateLeaseDto {
  @IsOptional()
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxLength(255, { message: 'name must be at most 255 characters' })
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
