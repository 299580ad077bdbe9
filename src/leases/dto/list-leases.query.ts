import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, IsUUID, Max, Min } from 'class-validator';
import { LEASE_STATUSES } from '../../model/lease-status.js';
import { INPUT_DATE_FORMATS as INPUT_DATE } from '../../common/dto/wire-date.decorator.js';

export const SORT_KEYS = ['created_at', 'name', 'start_date', 'end_date', 'status'] as const;

/** GET /v1/leases query: filters, keyset paging and sort. */
export class ListLeasesQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 1000,
    description: 'At most this many leases; without it, every lease',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'limit must be a whole number' })
  @Min(1, { message: 'limit must be at least 1' })
  @Max(1000, { message: 'limit must be at most 1000' })
  limit?: number;

  @ApiPropertyOptional({ format: 'uuid', description: 'Leases after this one, in the sort order' })
  @IsOptional()
  @IsUUID('all', { message: 'marker must be a lease id' })
  marker?: string;

  @ApiPropertyOptional({ enum: LEASE_STATUSES })
  @IsOptional()
  @IsIn(LEASE_STATUSES, { message: `status must be one of ${LEASE_STATUSES.join(', ')}` })
  status?: string;

  /** `key` or `key:asc|desc`. */
  @ApiPropertyOptional({
    pattern: `^(${SORT_KEYS.join('|')})(:(asc|desc))?$`,
    default: 'created_at',
    example: 'start_date:desc',
  })
  @IsOptional()
  @IsString()
  sort?: string;

  @ApiPropertyOptional({
    description: `Only leases ending after this (a time window; Climate's). ${INPUT_DATE}`,
  })
  @IsOptional()
  @IsString({ message: 'start must be a date' })
  start?: string;

  @ApiPropertyOptional({
    description: `Only leases starting before this (a time window; Climate's). ${INPUT_DATE}`,
  })
  @IsOptional()
  @IsString({ message: 'end must be a date' })
  end?: string;

  @ApiPropertyOptional({ description: "An admin's filter; others see their own project only" })
  @IsOptional()
  @IsString()
  project_id?: string;
}
