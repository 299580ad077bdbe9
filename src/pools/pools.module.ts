import { DynamicModule, Global, Module } from '@nestjs/common';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { HostQueryBuilder } from '../requirements/host-query.js';
import { FreeStarts } from './free-starts.js';
import { AllocationsService } from './allocations.service.js';
import { PlacementWeights } from './placement-weights.js';
import { PoolsController } from './pools.controller.js';
import { PoolsRepository } from './pools.repository.js';
import { PoolsService } from './pools.service.js';
import { PowerReadiness } from './power-readiness.js';

/**
 * Pools (freepool, shared, recycle, reservation and topology aggregates) and their sync
 * with the compute service; allocations, availability and the capacity plan.
 */
@Global()
@Module({
  controllers: [PoolsController],
  providers: [
    FreeStarts,
    AllocationsService,
    HostQueryBuilder,
    PlacementWeights,
    PoolsRepository,
    PoolsService,
    PowerReadiness,
  ],
  exports: [
    COMPUTE_DRIVER,
    FreeStarts,
    AllocationsService,
    HostQueryBuilder,
    PoolsRepository,
    PoolsService,
    PowerReadiness,
  ],
})
export class PoolsModule {
  /** The compute driver chosen by COMPUTE_DRIVER (or a test double). */
  static forRoot(driver: ComputeDriver): DynamicModule {
    return {
      module: PoolsModule,
      providers: [{ provide: COMPUTE_DRIVER, useValue: driver }],
      exports: [COMPUTE_DRIVER],
    };
  }
}
