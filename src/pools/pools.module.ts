import { DynamicModule, Global, Module } from '@nestjs/common';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { AllocationsRepository } from './allocations.repository.js';
import { AllocationsService } from './allocations.service.js';
import { HealingService } from './healing.service.js';
import { HostMover } from './host-mover.js';
import { HostPropertiesService } from './host-properties.service.js';
import { HostQueryBuilder } from './host-query.js';
import { HostsController } from './hosts.controller.js';
import { HostsService } from './hosts.service.js';
import { PoolSync } from './pool-sync.js';
import { InstancePool } from './instance-pool.js';
import { SlotMover } from './slot-mover.js';
import { SlotsRepository } from './slots.repository.js';
import { PoolsRepository } from './pools.repository.js';
import { PoolsService } from './pools.service.js';
import { PoolsMaintenance } from './pools-maintenance.js';
import { PoolsController } from './pools.controller.js';

/** Hosts, pools, allocations and the capacity plan. */
@Global()
@Module({
  controllers: [HostsController, PoolsController],
  providers: [
    AllocationsRepository,
    AllocationsService,
    HealingService,
    HostMover,
    HostPropertiesService,
    HostQueryBuilder,
    HostsService,
    PoolSync,
    PoolsRepository,
    PoolsService,
    InstancePool,
    SlotMover,
    SlotsRepository,
    PoolsMaintenance,
  ],
  exports: [
    COMPUTE_DRIVER,
    AllocationsRepository,
    HealingService,
    HostQueryBuilder,
    PoolSync,
    PoolsRepository,
    InstancePool,
    SlotsRepository,
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
