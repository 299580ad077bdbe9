import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { runsManagerTimers } from '../config/roles.js';
import { errorMessage } from './bounded.js';
import { Metrics } from './metrics.js';

/** Longest a stop waits for a run in hand; what it cuts off, the next run or manager redoes. */
const STOP_WITHIN_MS = 10_000;

export interface JobOptions {
  /** The metrics label and the log's name for it. */
  name: string;
  everyMs: number;
  run: () => Promise<unknown>;
  /** Also run once at start (default: first run after one interval). */
  runAtStart?: boolean;
}

/**
 * One periodic job of the manager: its timer (in @nestjs/schedule's registry), a single run in flight (a tick while one
 * runs is skipped), a bounded stop, and its runs counted in
 * `climate_periodic_runs_total{job,result}` and `climate_periodic_run_seconds{job}`.
 */
export class PeriodicJob {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly options: JobOptions,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
    private readonly scheduler: SchedulerRegistry,
    /** Whether its timer runs here (the manager's role, MANAGER_TIMER on). */
    readonly timed: boolean,
  ) {}

  private get timerName(): string {
    return `climate-${this.options.name}`;
  }

  /** Starts the timer where it runs here (the owner calls it on the app's bootstrap). */
  start(): void {
    if (!this.timed || this.stopped || this.timer !== null) return;
    // Not unref'd: a manager with no port open lives by its timers.
    this.timer = setInterval(() => void this.tick(), this.options.everyMs);
    this.scheduler.addInterval(this.timerName, this.timer);
    if (this.options.runAtStart === true) void this.tick();
  }

  /** A run now unless one is in hand (then that one); never rejects. */
  tick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.once().finally(() => (this.running = null));
    return this.running;
  }

  /** Stops the timer and waits for the run in hand, at most STOP_WITHIN_MS. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) {
      this.scheduler.deleteInterval(this.timerName);
      this.timer = null;
    }
    if (this.running === null) return;
    let timeout: NodeJS.Timeout | undefined;
    const cutOff = new Promise<void>((resolve) => {
      timeout = setTimeout(resolve, STOP_WITHIN_MS);
      timeout.unref();
    });
    await Promise.race([this.running, cutOff]);
    clearTimeout(timeout);
  }

  private async once(): Promise<void> {
    const { name, run } = this.options;
    const end = this.metrics.periodicSeconds.startTimer({ job: name });
    try {
      await run();
      this.metrics.periodicRuns.inc({ job: name, result: 'ok' });
    } catch (error) {
      this.metrics.periodicRuns.inc({ job: name, result: 'failed' });
      this.logger.error({ msg: 'periodic job failed', job: name, error: errorMessage(error) });
    } finally {
      end();
    }
  }
}

/**
 * Where the manager's periodic jobs are defined: their timers behind the one role gate
 * (runsManagerTimers), all stopped, bounded, when the app stops.
 */
@Injectable()
export class PeriodicJobs implements OnApplicationShutdown {
  private readonly logger = new Logger('manager');
  private readonly jobs: PeriodicJob[] = [];

  constructor(
    private readonly metrics: Metrics,
    private readonly scheduler: SchedulerRegistry,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * The job; its start() starts the timer where this process runs the manager's timers.
   * Elsewhere it runs only when called (tests, and the owner's own triggers).
   */
  define(options: JobOptions): PeriodicJob {
    const timed = runsManagerTimers(this.config);
    const job = new PeriodicJob(options, this.metrics, this.logger, this.scheduler, timed);
    this.jobs.push(job);
    return job;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.jobs.map((job) => job.stop()));
  }
}
