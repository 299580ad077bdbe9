import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, IsUUID, Max, Min } from 'class-validator';
import { LEASE_STATUSES } from '../lease-status.js';

export const SORT_KEYS = ['created_at', 'name', 'start_date', 'end_date', 'status'] as const;

/** GET /v1/leases query: filters, keyset paging and sort. */
export class ListLeasesQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'limit must be a whole number' })
  @Min(1, { message: 'limit must be at least 1' })
  @Max(1000, { message: 'limit must be at most 1000' })
  limit?: number;

  @IsOptional()
  @IsUUID('all', { message: 'marker must be a lease id' })
  marker?: string;

  @IsOptional()
  @IsIn(LEASE_STATUSES, { message: `status must be one of ${LEASE_STATUSES.join(', ')}` })
  status?: string;

  /** `key` or `key:asc|desc`. */
  @IsOptional()
  @IsString()
  sort?: string;

  @IsOptional()
  @IsString()
  project_id?: string;
}
