import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { errorMessage } from '../observability/bounded.js';
import { PeriodicJob, PeriodicJobs } from '../observability/periodic-jobs.js';
import { PowerTransitions } from './power-transitions.js';
import { PlanStore } from './plan-store.js';
import { PowerRepository } from './power.repository.js';
import { PowerReport } from './power-report.js';
import { Provisioning } from './provisioning.js';

const DAY = 86_400_000;

/** How long the log keeps what it needs for the past-30-days figure. */
const LOG_DAYS = 31;

/**
 * The power plan's periodic run, where the manager runs (every POWER_INTERVAL_MS): see
 * unsettled transitions through, bring the stored plan up to date and begin the
 * transitions it asks for now, prepare the reservations within the lead time. Each run starts from the database alone, so any
 * replica may run it, and a restart loses nothing.
 */
@Injectable()
export class PowerService implements OnApplicationBootstrap {
  private readonly logger = new Logger('power');
  private readonly job: PeriodicJob;
  private prunedAt = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: PowerRepository,
    private readonly store: PlanStore,
    private readonly transitions: PowerTransitions,
    private readonly provisioning: Provisioning,
    private readonly report: PowerReport,
    private readonly clock: Clock,
    jobs: PeriodicJobs,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.job = jobs.define({
      name: 'power',
      everyMs: config.power.intervalMs,
      run: () => this.once(),
    });
  }

  onApplicationBootstrap(): void {
    this.job.start();
  }

  /** One run (a run already going is shared, not doubled). */
  run(): Promise<void> {
    return this.job.tick();
  }

  private async once(): Promise<void> {
    const steps: [string, () => Promise<void>][] = [
      ['finish', () => this.transitions.finish()],
      ['decide', async () => this.transitions.act(await this.transitions.decide())],
      ['prepare', () => this.provisioning.run()],
      ['prune', () => this.prune()],
      // The gauges of /metrics, here rather than at scrape time.
      ['metrics', () => this.report.refreshMetrics()],
    ];
    // One failing step never stops the others.
    for (const [step, work] of steps) {
      try {
        await work();
      } catch (error) {
        this.logger.error({ msg: `power plan ${step} failed`, error: errorMessage(error) });
      }
    }
  }

  private async prune(): Promise<void> {
    const now = this.clock.now().getTime();
    if (now - this.prunedAt < DAY) return;
    const before = new Date(now - LOG_DAYS * DAY);
    await this.repo.prune(this.dataSource.manager, before);
    await this.store.pruneSpans(this.dataSource.manager, before);
    this.prunedAt = now;
  }
}
