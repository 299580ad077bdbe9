import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { errorMessage } from '../observability/bounded.js';
import { Metrics } from '../observability/metrics.js';
import { PeriodicJob, PeriodicJobs } from '../observability/periodic-jobs.js';
import { runsManager } from '../config/roles.js';
import { envelope, type OutboxRow } from './envelope.js';
import { WebhookSender, type DeliveryOutcome } from './webhook-sender.js';
import { receiverName } from '../config/webhook-settings.js';
import { chainsByLease, retryDelayMs } from './webhook-schedule.js';
import { webhookHeaders } from './webhook-signature.js';
import { deleteDelivered, deletePublished } from './notification-outbox.js';
import { WebhookStore } from './webhook-store.js';

/** Notifications read per query; a pass reads batches until none are left. */
const BATCH = 100;
/** Leases whose notifications go out at once to one receiver. */
const CONCURRENCY = 8;
const TIMER_MS = 1000;
const SWEEP_MS = 60_000;

interface BatchResult {
  /** Outbox ids the receiver answered 2xx to (each recorded as soon as it was). */
  delivered: string[];
  /** The first failure, or null when none. */
  error: string | null;
}

/**
 * Our hold on a receiver during a pass: renewed every quarter of its time to live, so a
 * pass may run as long as it needs; a POST starts only while the hold has room for the
 * whole POST (as this process last saw it renewed), so another manager never takes the
 * receiver while our POST may still be answered.
 */
interface Hold {
  /** Date.now() before which the claim is surely ours (the renewal asked at that time + ttl). */
  until: number;
  /** A renewal found the claim taken: stop. */
  lost: boolean;
}

/**
 * Sends the outbox to each webhook receiver (manager and `all` roles). A receiver is
 * claimed in the database, so one manager at a time sends to it, oldest first, each
 * lease's notifications in order; what it answers 2xx to is recorded per receiver, so a
 * dead receiver holds back nobody else. Failures keep the notifications and retry them
 * after a growing wait (1 s to 60 s), for as long as it takes; a repeat has the same
 * message_id.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly logger = new Logger('webhooks');
  private readonly running = new Map<string, Promise<number>>();
  private readonly backlogs = new Map<string, number>();
  private registered = false;
  private lastSweep = 0;
  private readonly job: PeriodicJob;
  private stopped = false;

  constructor(
    private readonly store: WebhookStore,
    private readonly sender: WebhookSender,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
    jobs: PeriodicJobs,
  ) {
    // Each tick only starts the passes not in hand: a slow receiver holds back no other.
    this.job = jobs.define({
      name: 'webhooks',
      everyMs: Math.min(TIMER_MS, config.eventPollMs),
      run: async () => this.tick(),
    });
  }

  private get receivers(): string[] {
    return this.config.webhooks.urls;
  }

  /** How long a claim lasts unrenewed; a manager that died loses the receiver after this. */
  private get claimTtlMs(): number {
    return Math.max(60_000, 3 * this.config.webhooks.timeoutMs);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!runsManager(this.config)) return;
    if (this.receivers.length === 0) {
      await this.forgetPublished();
      return;
    }
    this.job.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.job.stop();
    await Promise.allSettled([...this.running.values()]);
  }

  /** The timer's call: a pass for each receiver not already in one; now and then a sweep. */
  tick(): void {
    if (this.stopped) return;
    for (const url of this.receivers) {
      if (!this.running.has(url)) this.pass(url).catch((error) => this.databaseFailed(error));
    }
    if (Date.now() - this.lastSweep >= SWEEP_MS) {
      this.lastSweep = Date.now();
      this.store.sweep(this.receivers, this.busOn).catch((error) => this.databaseFailed(error));
    }
  }

  /** A pass for every receiver that is due; how many notifications they took (tests). */
  async pump(): Promise<number> {
    const counts = await Promise.all(this.receivers.map((url) => this.pass(url)));
    return counts.reduce((a, b) => a + b, 0);
  }

  private get busOn(): boolean {
    return this.config.notify.url !== null;
  }

  private pass(url: string): Promise<number> {
    const current = this.running.get(url);
    if (current !== undefined) return current;
    const run = this.deliver(url).finally(() => this.running.delete(url));
    this.running.set(url, run);
    return run;
  }

  private async deliver(url: string): Promise<number> {
    if (!this.registered) {
      await this.store.register(this.receivers);
      this.registered = true;
    }
    const shared = this.clock.shared();
    const asked = Date.now();
    const failures = await this.store.claim(url, this.owner, shared, this.claimTtlMs);
    if (failures === null) return 0;
    const hold: Hold = { until: asked + this.claimTtlMs, lost: false };
    const renewal = setInterval(() => this.renew(url, hold), this.claimTtlMs / 4);
    renewal.unref();
    let delivered = 0;
    let lastAt: Date | null = null;
    let error: string | null = null;
    try {
      for (;;) {
        const rows = await this.store.pending(url, BATCH);
        if (rows.length === 0) break;
        const result = await this.sendBatch(url, rows, hold);
        if (result.delivered.length > 0) {
          lastAt = this.clock.now();
          delivered += result.delivered.length;
          await deleteDelivered(
            this.dataSource.manager,
            result.delivered,
            this.receivers,
            this.busOn,
          ).catch(() => 0);
        }
        error = result.error;
        if (error !== null || rows.length < BATCH || !this.roomFor(hold) || this.stopped) break;
      }
    } catch (dbError) {
      // The database, not the receiver: free the receiver and let the next tick retry.
      const unchanged = { failures, retryInMs: 0, error: null };
      await this.store.release(url, this.owner, shared, unchanged, lastAt).catch(() => false);
      throw dbError;
    } finally {
      clearInterval(renewal);
    }
    const failed = error === null ? 0 : failures + 1;
    const state = { failures: failed, retryInMs: retryDelayMs(failed), error };
    await this.store.release(url, this.owner, this.clock.shared(), state, lastAt);
    this.report(url, failures, error);
    await this.measureBacklog(url);
    return delivered;
  }

  /** Moves the claim's expiry on, if it is still ours. */
  private renew(url: string, hold: Hold): void {
    const asked = Date.now();
    this.store.renew(url, this.owner, this.clock.shared(), this.claimTtlMs).then(
      (ours) => {
        if (ours) hold.until = Math.max(hold.until, asked + this.claimTtlMs);
        else hold.lost = true;
      },
      // The database away: the hold runs out on its own.
      (error: unknown) => this.databaseFailed(error),
    );
  }

  /**
   * Records a 2xx, again after a failure (a starved manager's database connection can time
   * out on its own delay) for as long as the claim surely stays ours: until it is recorded
   * no other manager sends that notification, and the receiver has it. A database away
   * longer than that throws; the notification may then go again (the other manager).
   */
  private async record(url: string, id: string, hold: Hold): Promise<void> {
    // A statement's longest wait: past it the connection is dropped (bounded-client.ts).
    const statementMs = this.config.databaseQueryTimeoutMs + 1000;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.store.delivered(url, [id], this.clock.now());
        return;
      } catch (error) {
        const waitMs = Math.min(1000 * attempt, 5000);
        if (hold.lost || this.stopped || Date.now() + waitMs + statementMs >= hold.until) {
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  /** Room for one more POST (its timeout twice over: a starved one runs late) and its record. */
  private roomFor(hold: Hold): boolean {
    return !hold.lost && Date.now() + 2 * this.config.webhooks.timeoutMs + 10_000 < hold.until;
  }

  /** Each lease's chain in order, CONCURRENCY leases at once; stops all when the receiver is away. */
  private async sendBatch(url: string, rows: OutboxRow[], hold: Hold): Promise<BatchResult> {
    const chains = chainsByLease(rows);
    const delivered: string[] = [];
    let error: string | null = null;
    let away = false;
    const dbErrors: Error[] = [];
    let next = 0;
    const open = (): boolean => !away && !this.stopped && this.roomFor(hold);
    const worker = async (): Promise<void> => {
      while (open() && next < chains.length) {
        for (const row of chains[next++]) {
          if (!open()) return;
          const outcome = await this.sendOne(url, row);
          this.metrics.webhookDeliveries.inc({ result: outcome.result });
          if (outcome.result === 'delivered') {
            // Recorded at once: a crash now repeats only what was in flight.
            try {
              await this.record(url, row.id, hold);
            } catch (e) {
              dbErrors.push(e instanceof Error ? e : new Error(String(e)));
              away = true;
              return;
            }
            delivered.push(row.id);
            continue;
          }
          error ??= `${outcome.error} (${row.event_type} ${row.message_id})`;
          // A refusal holds back this lease only; no answer at all, the whole receiver.
          if (outcome.result !== 'refused') away = true;
          break;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, chains.length) }, worker));
    if (dbErrors.length > 0) throw dbErrors[0];
    return { delivered, error };
  }

  private sendOne(url: string, row: OutboxRow): Promise<DeliveryOutcome> {
    const { secret, timeoutMs } = this.config.webhooks;
    // The very JSON the bus carries inside its envelope.
    const body = envelope(row, this.config.notify.publisherId)['oslo.message'];
    const headers = webhookHeaders(secret, row, url, body, this.clock.now());
    return this.sender.post(url, headers, body, timeoutMs);
  }

  /** One warning when a receiver starts failing, one line when it takes deliveries again. */
  private report(url: string, failuresBefore: number, error: string | null): void {
    const receiver = receiverName(url);
    if (error !== null && failuresBefore === 0) {
      this.logger.warn({
        msg: 'webhook deliveries failing; kept and retried with backoff',
        receiver,
        error,
      });
    } else if (error !== null) {
      this.logger.debug({ msg: 'webhook deliveries still failing', receiver, error });
    } else if (failuresBefore > 0) {
      this.logger.log({ msg: 'webhook receiver taking deliveries again', receiver });
    }
  }

  /** The database's outages are reported by the manager's polls and /readyz. */
  private databaseFailed(error: unknown): void {
    this.logger.debug({ msg: 'webhook pass not run', error: errorMessage(error) });
  }

  private async measureBacklog(url: string): Promise<void> {
    try {
      this.backlogs.set(url, await this.store.backlog(url));
      let total = 0;
      for (const n of this.backlogs.values()) total += n;
      this.metrics.webhookBacklog.set(total);
    } catch {
      // The gauge keeps its last value.
    }
  }

  /**
   * With webhooks off, rows the bus published while they were on wait for nobody:
   * delete them once at start.
   */
  private async forgetPublished(): Promise<void> {
    try {
      await deletePublished(this.dataSource.manager);
    } catch (error) {
      this.logger.debug({ msg: 'published outbox rows not cleared', error: errorMessage(error) });
    }
  }
}
