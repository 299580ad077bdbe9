import { ApiProperty } from '@nestjs/swagger';
import { WellFormed } from '../../common/dto/rules.js';
import { BodyRules } from '../../common/validation.pipe.js';
import { MOVABLE_POOLS, type MovablePool } from '../pool-names.js';
import type { AggregateKind } from '../pools.repository.js';

export const POOL_KINDS = [
  'freepool',
  'shared',
  'recycle',
  'reservation',
  'instance',
  'topology',
] as const satisfies readonly AggregateKind[];

/** A pool or topology aggregate, as Climate records it. */
export class PoolResponse {
  @ApiProperty({ type: 'integer' })
  id!: number;

  @ApiProperty()
  name!: string;

  @ApiProperty({ enum: POOL_KINDS })
  kind!: (typeof POOL_KINDS)[number];

  @ApiProperty({ type: 'string', nullable: true })
  availability_zone!: string | null;

  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } })
  metadata!: Record<string, string>;

  @ApiProperty({ type: [String], description: 'Host names, sorted' })
  hosts!: string[];
}

export class PoolListBody {
  @ApiProperty({ type: [PoolResponse] })
  pools!: PoolResponse[];
}

/** PUT /v1/os-hosts/{id}/pool body; other keys are ignored. */
@BodyRules({ otherKeys: 'ignored' })
export class PoolMoveRequest {
  @ApiProperty({
    enum: ['shared', 'freepool'],
    description: 'shared: out of the reservation pool (its allocations move); freepool: back in',
  })
  @WellFormed(
    (pool) =>
      (MOVABLE_POOLS as readonly unknown[]).includes(pool)
        ? null
        : `pool must be one of ${MOVABLE_POOLS.join(', ')}`,
    'InvalidInput',
    () => false,
  )
  pool!: MovablePool;
}
