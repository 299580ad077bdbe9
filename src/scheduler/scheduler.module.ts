import { Module } from '@nestjs/common';
import { LeasesModule } from '../leases/leases.module.js';
import { PluginsModule } from '../plugins/plugins.module.js';
import { FilterBodyWorker } from './filter-body-worker.js';
import { PoolVerdictsRepository } from './pool-verdicts.repository.js';
import { ReservedBoot } from './reserved-boot.js';
import { SchedulerController } from './scheduler.controller.js';
import { SchedulerFilterService } from './scheduler-filter.service.js';

/** What Nova's scheduler asks: which hosts a request may use, and leases made at boot. */
@Module({
  imports: [LeasesModule, PluginsModule],
  controllers: [SchedulerController],
  providers: [SchedulerFilterService, PoolVerdictsRepository, ReservedBoot, FilterBodyWorker],
})
export class SchedulerModule {}
