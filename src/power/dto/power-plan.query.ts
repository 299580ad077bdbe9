import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { INPUT_DATE_FORMATS as INPUT_DATE } from '../../common/dto/wire-date.decorator.js';
import { POWER_STATES } from '../../hosts/dto/host-power.dto.js';

/** Hosts per page when the caller names no limit. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** GET /v1/power-plan query: keyset pages by host id, and filters. */
export class PowerPlanQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_LIMIT,
    default: DEFAULT_LIMIT,
    description: 'Hosts per page; `next` links the following page',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'limit must be a whole number' })
  @Min(1, { message: 'limit must be at least 1' })
  @Max(MAX_LIMIT, { message: `limit must be at most ${MAX_LIMIT}` })
  limit?: number;

  @ApiPropertyOptional({
    pattern: '^[0-9]{1,9}$',
    description: 'Hosts after this host id (the last id of the previous page)',
  })
  @IsOptional()
  @Matches(/^[0-9]{1,9}$/, { message: 'marker must be a host id' })
  marker?: string;

  @ApiPropertyOptional({ description: 'Only this host: its id or hypervisor_hostname' })
  @IsOptional()
  @IsString()
  host?: string;

  @ApiPropertyOptional({ enum: POWER_STATES, description: 'Only hosts in this power state now' })
  @IsOptional()
  @IsIn(POWER_STATES, { message: `power_state must be one of ${POWER_STATES.join(', ')}` })
  power_state?: (typeof POWER_STATES)[number];

  @ApiPropertyOptional({
    enum: ['true', 'false'],
    description: 'Only hosts the plan may (true) or may not (false) switch off',
  })
  @IsOptional()
  @IsIn(['true', 'false'], { message: 'in_plan must be true or false' })
  in_plan?: 'true' | 'false';

  @ApiPropertyOptional({
    enum: ['on', 'off'],
    description: 'Only hosts with a planned transition to this state (in the time window)',
  })
  @IsOptional()
  @IsIn(['on', 'off'], { message: 'to must be on or off' })
  to?: 'on' | 'off';

  @ApiPropertyOptional({
    description: `Only hosts with a planned transition at or after this (default now). ${INPUT_DATE}`,
  })
  @IsOptional()
  @IsString({ message: 'start must be a date' })
  start?: string;

  @ApiPropertyOptional({
    description: `Only hosts with a planned transition before this (default 30 days on). ${INPUT_DATE}`,
  })
  @IsOptional()
  @IsString({ message: 'end must be a date' })
  end?: string;
}
