import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import { EventRunner } from './event-runner.js';
import { EventsRepository } from './events.repository.js';
import { ReservationSync } from '../reservations/reservation-sync.js';
import { ManagerPulse } from '../observability/manager-pulse.js';
import { PeriodicJob, PeriodicJobs } from '../observability/periodic-jobs.js';

/**
 * Polls for due events and runs them. Many replicas may run against one database: events
 * are claimed with SKIP LOCKED and a claim expiry that is renewed while the action runs,
 * so a replica that dies leaves work that another takes over.
 */
@Injectable()
export class ManagerService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly logger = new Logger('manager');
  private readonly running = new Set<Promise<void>>();
  private ticking = false;
  private claiming = false;
  /** A slot freed while a claim ran: claim again after it. */
  private again = false;
  /** Claims as soon as a slot frees, not only at the next poll (with the timer on). */
  private refilling = false;
  private stopped = false;
  private readonly job: PeriodicJob;

  constructor(
    private readonly events: EventsRepository,
    private readonly runner: EventRunner,
    private readonly resyncs: ReservationSync,
    private readonly clock: Clock,
    private readonly pulse: ManagerPulse,
    jobs: PeriodicJobs,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.job = jobs.define({
      name: 'events',
      everyMs: config.eventPollMs,
      run: () => this.tick(),
    });
  }

  onApplicationBootstrap(): void {
    if (!this.job.timed) return;
    this.job.start();
    this.refilling = true;
    this.pulse.started();
    this.logger.log({
      msg: 'manager started',
      owner: this.owner,
      poll_ms: this.config.eventPollMs,
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.refilling = false;
    await this.job.stop();
    // Bounded wait for running work; what is cut off is retaken when its claim expires.
    await Promise.race([this.drain(), new Promise((r) => setTimeout(r, 10_000).unref())]);
  }

  /**
   * One poll: claims what fits in the free concurrency and starts it without waiting, so
   * a slow action never holds up other leases. Ends run before starts of the same batch,
   * so back-to-back leases hand a host over cleanly. Returns how many events it claimed.
   */
  async tick(): Promise<number> {
    if (this.ticking || this.stopped) return 0;
    this.ticking = true;
    try {
      const claimed = await this.claimEvents();
      const resyncs = await this.resyncs.claim();
      for (const work of resyncs) void this.keep(work);
      // Readiness: this manager can claim events.
      this.pulse.polled();
      return claimed + resyncs.length;
    } catch (error) {
      this.pulse.polled(error);
      this.logger.error(error instanceof Error ? error : String(error));
      return 0;
    } finally {
      this.ticking = false;
    }
  }

  /**
   * Claims what fits in the free concurrency, again while slots freed meanwhile: a storm
   * of due events runs at the speed of its actions, not one batch per poll.
   */
  private async claimEvents(): Promise<number> {
    if (this.claiming) {
      this.again = true;
      return 0;
    }
    this.claiming = true;
    try {
      let total = 0;
      do {
        this.again = false;
        const claimed = await this.events.claimDue(
          this.clock.shared(),
          this.owner,
          this.config.eventClaimTtlMs,
          this.config.eventConcurrency - this.running.size,
        );
        if (claimed.length > 0) this.launch(claimed);
        total += claimed.length;
      } while (this.again && this.refilling && !this.stopped);
      return total;
    } finally {
      this.claiming = false;
    }
  }

  /** A slot is free: claim into it now rather than at the next poll. */
  private refill(): void {
    if (!this.refilling || this.stopped) return;
    this.claimEvents().catch((error: unknown) => {
      this.logger.error(error instanceof Error ? error : String(error));
    });
  }

  /** Waits until every event this replica started has finished. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private launch(claimed: LeaseEvent[]): void {
    const ends = claimed.filter((e) => e.eventType !== 'start_lease').map((e) => this.track(e));
    const starts = claimed.filter((e) => e.eventType === 'start_lease');
    if (starts.length === 0) return;
    const afterEnds = Promise.allSettled(ends);
    for (const e of starts) void this.track(e, afterEnds);
  }

  private track(event: LeaseEvent, after: Promise<unknown> = Promise.resolve()): Promise<void> {
    return this.keep(after.then(() => this.execute(event)));
  }

  /** Running work, so that shutdown and `drain` wait for it. */
  private keep(work: Promise<void>): Promise<void> {
    this.running.add(work);
    void work
      .finally(() => {
        this.running.delete(work);
        this.refill();
      })
      .catch(() => undefined);
    return work;
  }

  private async execute(event: LeaseEvent): Promise<void> {
    const ttl = this.config.eventClaimTtlMs;
    const heartbeat = setInterval(
      () => {
        this.events
          .heartbeat(event.id, this.owner, this.clock.shared(), ttl)
          .catch((error: unknown) => {
            this.logger.warn({ msg: 'heartbeat failed', event_id: event.id, error: String(error) });
          });
      },
      Math.max(100, Math.floor(ttl / 3)),
    );
    try {
      await this.runner.run(event, this.owner);
    } catch (error) {
      // One failing item never stops the sweep.
      this.logger.error(error instanceof Error ? error : String(error));
    } finally {
      clearInterval(heartbeat);
    }
  }
}
