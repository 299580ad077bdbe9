import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { TrustsService } from '../compute/trusts.service.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { LeaseDeleter } from '../leases/lease-deleter.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { HealingService } from './healing.service.js';
import { followHostStates } from './host-states.js';
import { PoolSync } from '../plugins/physical-host/pool-sync.js';
import { refreshHostBusy } from '../pools/host-busy.js';
import { compactGaugeCounts } from '../observability/gauge-counts.js';
import { Metrics } from '../observability/metrics.js';
import { PeriodicJob, PeriodicJobs } from '../observability/periodic-jobs.js';

/**
 * Periodic pool work where the manager runs: bring the capacity plan's host_busy up to
 * date (so that the hosts marked changed stay few), heal reservations whose hosts failed
 * (retrying what could not be moved before), release recycled hosts, and remove the
 * Keystone trusts of ended leases that could not be removed at their end; then each
 * plugin's own upkeep.
 */
@Injectable()
export class Maintenance implements OnApplicationBootstrap {
  private readonly logger = new Logger('pools');
  private readonly job: PeriodicJob;

  constructor(
    private readonly dataSource: DataSource,
    private readonly healing: HealingService,
    private readonly pools: PoolSync,
    private readonly trusts: TrustsService,
    private readonly plugins: PluginRegistry,
    private readonly deleter: LeaseDeleter,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    jobs: PeriodicJobs,
    @Inject(CONFIG) config: Config,
  ) {
    this.job = jobs.define({
      name: 'maintenance',
      everyMs: config.healIntervalMs,
      run: () => this.once(),
    });
  }

  onApplicationBootstrap(): void {
    this.job.start();
  }

  /** One upkeep pass (a pass already going is shared, not doubled). */
  run(): Promise<void> {
    return this.job.tick();
  }

  private async once(): Promise<void> {
    try {
      // Apart, so that neither it nor the rest can stop the other.
      await refreshHostBusy(this.dataSource.manager).catch((error: unknown) => {
        this.logger.error({ msg: 'host_busy refresh failed', error: String(error) });
      });
      // Keeps the count tables of /metrics small even where nothing scrapes.
      await compactGaugeCounts(this.dataSource.manager).catch((error: unknown) => {
        this.logger.error({ msg: 'gauge count compaction failed', error: String(error) });
      });
      await this.followDriver();
      await this.healing.heal();
      await this.pools.sweepRecycle();
      await this.trusts.sweep();
      await this.deleter.finishDeletes();
      for (const plugin of this.plugins.all()) await plugin.upkeep?.();
      this.metrics.maintenanceRuns.inc({ result: 'ok' });
    } catch (error) {
      this.metrics.maintenanceRuns.inc({ result: 'failed' });
      throw error;
    }
  }

  /** Hosts the driver reports down or up (see followHostStates). */
  private async followDriver(): Promise<void> {
    const states = await this.driver.hostStates();
    if (states === null) return;
    const down = [...states].filter(([, up]) => !up).map(([name]) => name);
    const up = [...states].filter(([, isUp]) => isUp).map(([name]) => name);
    const changed = await followHostStates(
      this.dataSource.manager,
      'hypervisor_hostname',
      down,
      up,
      this.clock.now(),
    );
    if (changed > 0) this.logger.warn({ msg: 'host states changed', down, changed });
  }
}
