import { Module } from '@nestjs/common';
import { HostQueryBuilder } from '../requirements/host-query.js';
import { FreeStarts } from './free-starts.js';
import { AllocationsService } from './allocations.service.js';
import { EvacuationPort } from './evacuation.js';
import { PlacementWeights } from './placement-weights.js';
import { PoolsController } from './pools.controller.js';
import { PoolsRepository } from './pools.repository.js';
import { PoolsService } from './pools.service.js';
import { PowerReadiness } from './power-readiness.js';

/**
 * Pools (freepool, shared, recycle, reservation and topology aggregates) and their sync
 * with the compute service; allocations, availability and the capacity plan. Evacuations
 * go through EvacuationPort, which the manager's UpkeepModule fills.
 */
@Module({
  controllers: [PoolsController],
  providers: [
    FreeStarts,
    AllocationsService,
    EvacuationPort,
    HostQueryBuilder,
    PlacementWeights,
    PoolsRepository,
    PoolsService,
    PowerReadiness,
  ],
  exports: [
    AllocationsService,
    EvacuationPort,
    HostQueryBuilder,
    PoolsRepository,
    PoolsService,
    PowerReadiness,
  ],
})
export class PoolsModule {}
