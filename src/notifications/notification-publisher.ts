import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { DataSource } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withTransaction } from '../database/transaction.js';
import { errorMessage, TimeoutError, within } from '../observability/bounded.js';
import { Metrics } from '../observability/metrics.js';
import { PeriodicJob, PeriodicJobs } from '../observability/periodic-jobs.js';
import {
  BrokerError,
  closeLink,
  declareLikeOslo,
  openChannel,
  openLink,
  problemOf,
  TIMEOUT_MS,
  type BrokerProblem,
  reportUsedAsIs,
} from './amqp-link.js';
import { envelope, type OutboxRow } from './envelope.js';
import { deleteDelivered, settlePublished, unpublished } from './notification-outbox.js';

/** Rows claimed, published and deleted per transaction. */
const BATCH = 200;
const MAX_BACKOFF_MS = 30_000;
const TIMER_MS = 1000;
/** How often a wait for confirms looks at the connection's state. */
const CONFIRM_POLL_MS = 100;

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

interface Broker {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Set once the connection or channel is gone (the first reason). */
  lost: Error | null;
  /** connection.blocked: a broker alarm holds our publishes until it clears. */
  blocked: boolean;
}

/**
 * Publishes the outbox to RabbitMQ (manager and `all` roles). Rows are claimed with
 * SKIP LOCKED, published on a confirm channel and deleted in the same transaction once
 * the broker has confirmed them: a publisher that dies mid-batch leaves its rows to the
 * next one. A crash between the broker's confirm and the commit sends those messages
 * again, with the same message_id (at-least-once).
 *
 * No broker failure ends the process: every connection and channel has its handlers from
 * the start; a refusal, a block, a reset or a silent connection (heartbeats) is logged,
 * counted in climate_broker_problems_total and retried with backoff, the rows kept.
 */
@Injectable()
export class NotificationPublisher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('notifications');
  private broker: Broker | null = null;
  private connecting: Promise<Broker> | null = null;
  private failures = 0;
  /** Kinds of failure logged in this outage: one line each, however many attempts fail. */
  private readonly problemsLogged = new Set<BrokerProblem>();
  private retryAt = 0;
  private readonly job: PeriodicJob;
  private running: Promise<number> | null = null;
  private stopped = false;
  /** Objects found declared with other arguments, logged once each. */
  private readonly usedAsIs = new Set<string>();
  private readonly recorded = new WeakSet<object>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly metrics: Metrics,
    jobs: PeriodicJobs,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.job = jobs.define({
      name: 'notifications',
      everyMs: Math.min(TIMER_MS, config.eventPollMs),
      run: () => this.tick(),
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.notify.url === null || !this.job.timed) return;
    this.metrics.brokerConnected.set({ link: 'notifications' }, 0);
    this.job.start();
  }

  /** Bounded whatever the broker does: a pass gets its confirm timeout, a close 2 s. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.job.stop();
    const running = this.running?.then(
      () => undefined,
      () => undefined,
    );
    await within(running ?? Promise.resolve(), TIMEOUT_MS + 1000, 'the last pass').catch(
      () => undefined,
    );
    await this.disconnect();
  }

  /** The timer's call: skipped while the broker is backing off or blocks publishing. */
  async tick(): Promise<void> {
    if (this.stopped || Date.now() < this.retryAt || this.broker?.blocked) return;
    await this.pump().catch(() => undefined);
  }

  /**
   * Publishes every pending row; returns how many it published. A broker failure keeps
   * the rows, backs off and throws (logged once per outage and kind of failure).
   */
  pump(): Promise<number> {
    if (this.running !== null) return this.running;
    this.running = this.drain().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Closes the broker connection, bounded (tests; shutdown). */
  async disconnect(): Promise<void> {
    const broker = this.broker;
    this.broker = null;
    if (broker === null) return;
    broker.lost ??= new Error('closed by Climate');
    this.metrics.brokerConnected.set({ link: 'notifications' }, 0);
    await closeLink(broker.model);
  }

  private async drain(): Promise<number> {
    let total = 0;
    try {
      for (;;) {
        const sent = await this.batch();
        total += sent;
        if (sent < BATCH) break;
      }
      if (this.failures > 0) {
        this.logger.log({ msg: 'notification broker reachable again', failures: this.failures });
      }
      this.failures = 0;
      this.problemsLogged.clear();
      this.retryAt = 0;
      return total;
    } catch (error) {
      this.record(error);
      await this.disconnect();
      this.failures++;
      this.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, 250 * 2 ** this.failures);
      throw error;
    }
  }

  /** Logs (once per outage and kind of failure) and counts a failure, once however often it is seen. */
  private record(error: unknown): void {
    if (typeof error === 'object' && error !== null) {
      if (this.recorded.has(error)) return;
      this.recorded.add(error);
    }
    const problem = problemOf(error);
    this.metrics.brokerProblems.inc({ link: 'notifications', reason: problem });
    if (this.problemsLogged.has(problem)) return;
    this.problemsLogged.add(problem);
    this.logger.warn({
      msg: 'notifications not published; kept in the outbox and retried with backoff',
      problem,
      object:
        error instanceof BrokerError ? error.object : `exchange ${this.config.notify.exchange}`,
      error: errorMessage(error),
    });
  }

  private async batch(): Promise<number> {
    const receivers = this.config.webhooks.urls;
    const ids = await withTransaction(
      this.dataSource,
      async (tx) => {
        const rows = await unpublished(tx, BATCH);
        if (rows.length === 0) return [];
        await this.publish(rows);
        // Deleted, or kept for the webhook receivers that have not taken them yet.
        await settlePublished(
          tx,
          rows.map((r) => r.id),
          receivers,
        );
        this.metrics.notificationsPublished.inc(rows.length);
        return rows.map((r) => r.id);
      },
      1,
    );
    if (ids.length > 0 && receivers.length > 0) {
      // Left to the webhooks' sweep when this fails.
      await deleteDelivered(this.dataSource.manager, ids, receivers, true).catch(() => 0);
    }
    return ids.length;
  }

  /** Publishes the rows to every topic; resolves once the broker has confirmed them all. */
  private async publish(rows: OutboxRow[]): Promise<void> {
    const { exchange, topics, publisherId } = this.config.notify;
    const broker = await this.connect();
    if (broker.blocked) throw new BrokerError('connection', new Error('blocked by the broker'));
    for (const row of rows) {
      const body = Buffer.from(JSON.stringify(envelope(row, publisherId)));
      for (const topic of topics) {
        broker.channel.publish(exchange, `${topic}.info`, body, {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          persistent: true,
          messageId: row.message_id,
        });
      }
    }
    await this.confirmed(broker);
  }

  /**
   * Waits for the broker's confirms, TIMEOUT_MS at most, not counting time the broker
   * blocks the connection: a batch sent into a memory alarm is kept open until the alarm
   * clears, so that it is confirmed (and sent) once rather than sent again. A lost
   * connection ends the wait at once; so does shutdown.
   */
  private async confirmed(broker: Broker): Promise<void> {
    let settled: { error: Error | null } | null = null;
    void broker.channel.waitForConfirms().then(
      () => (settled = { error: null }),
      (error: unknown) => (settled = { error: asError(error ?? 'not confirmed') }),
    );
    let waited = 0;
    let last = Date.now();
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS));
      const now = Date.now();
      if (!broker.blocked || this.stopped) waited += now - last;
      last = now;
      const outcome = settled as { error: Error | null } | null;
      if (outcome?.error === null) return;
      // The connection's reason (already counted) rather than the confirms' echo of it.
      if (broker.lost !== null) throw broker.lost;
      if (outcome !== null) throw outcome.error;
      if (waited >= TIMEOUT_MS) {
        throw new TimeoutError(
          `the broker confirming notifications: no answer in ${TIMEOUT_MS} ms`,
        );
      }
    }
  }

  private async connect(): Promise<Broker> {
    if (this.broker !== null) return this.broker;
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<Broker> {
    const { url, exchange, topics, durable } = this.config.notify;
    let broker: Broker | null = null;
    let early: Error | null = null;
    const lost = (error: unknown): void => {
      if (broker === null) {
        early ??= asError(error);
        return;
      }
      if (broker.lost !== null) return;
      broker.lost = asError(error);
      this.record(error);
      if (this.broker === broker) {
        this.broker = null;
        this.metrics.brokerConnected.set({ link: 'notifications' }, 0);
        void closeLink(broker.model);
      }
    };
    const model = await openLink(url as string, 'the notification broker', {
      lost,
      blocked: (reason) => {
        if (broker === null || broker.blocked) return;
        broker.blocked = true;
        this.metrics.brokerProblems.inc({ link: 'notifications', reason: 'blocked' });
        this.logger.warn({ msg: 'the broker blocks publishing; notifications wait', reason });
      },
      unblocked: () => {
        if (broker === null || !broker.blocked) return;
        broker.blocked = false;
        this.logger.log({ msg: 'the broker takes notifications again' });
      },
    });
    try {
      // oslo.messaging's notifier declares `<topic>.info` too: messages wait for consumers.
      const asIs = await declareLikeOslo(model, {
        exchange,
        durable,
        queues: topics.map((topic) => ({ name: `${topic}.info` })),
      });
      reportUsedAsIs(asIs, this.usedAsIs, (entry) => this.logger.warn(entry));
      const channel = await openChannel(model, true, lost);
      // Set by the handlers while the channel opened (a closure: the compiler cannot see it).
      const failed = early as Error | null;
      if (failed !== null) throw failed;
      broker = { model, channel, lost: null, blocked: false };
      this.broker = broker;
      this.metrics.brokerConnected.set({ link: 'notifications' }, 1);
      return broker;
    } catch (error) {
      await closeLink(model);
      throw error;
    }
  }
}
