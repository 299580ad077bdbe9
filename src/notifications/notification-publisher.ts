import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { DataSource } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { sql } from '../database/sql.js';
import { withTransaction } from '../database/transaction.js';
import { Metrics } from '../observability/metrics.js';
import { envelope, type OutboxRow } from './envelope.js';
import { deleteDelivered, settlePublished } from './webhook-store.js';

/** Rows claimed, published and deleted per transaction. */
const BATCH = 200;
/** Longest a connect, or a batch's confirms, may take. */
const TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;
const TIMER_MS = 1000;

function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

interface Broker {
  model: ChannelModel;
  channel: ConfirmChannel;
}

/**
 * Publishes the outbox to RabbitMQ (manager and `all` roles). Rows are claimed with
 * SKIP LOCKED, published on a confirm channel and deleted in the same transaction once
 * the broker has confirmed them: a publisher that dies mid-batch leaves its rows to the
 * next one. A crash between the broker's confirm and the commit sends those messages
 * again, with the same message_id (at-least-once).
 */
@Injectable()
export class NotificationPublisher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('notifications');
  private broker: Broker | null = null;
  private connecting: Promise<Broker> | null = null;
  private failures = 0;
  private retryAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    const { role, managerTimer, notify } = this.config;
    if (role === 'api' || !managerTimer || notify.url === null) return;
    this.timer = setInterval(() => void this.tick(), Math.min(TIMER_MS, this.config.eventPollMs));
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
    await this.disconnect();
  }

  /** The timer's call: skipped while the broker is backing off. */
  async tick(): Promise<void> {
    if (this.stopped || Date.now() < this.retryAt) return;
    await this.pump().catch(() => undefined);
  }

  /**
   * Publishes every pending row; returns how many it published. A broker failure keeps
   * the rows, backs off and throws (logged once per outage).
   */
  pump(): Promise<number> {
    if (this.running !== null) return this.running;
    this.running = this.drain().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Closes the broker connection (tests; shutdown). */
  async disconnect(): Promise<void> {
    const broker = this.broker;
    this.broker = null;
    if (broker !== null) await broker.model.close().catch(() => undefined);
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
      this.retryAt = 0;
      return total;
    } catch (error) {
      await this.disconnect();
      if (this.failures === 0) {
        this.logger.warn({
          msg: 'notifications not published; kept in the outbox and retried with backoff',
          error: error instanceof Error ? error.message : String(error),
        });
      }
      this.failures++;
      this.retryAt = Date.now() + Math.min(MAX_BACKOFF_MS, 250 * 2 ** this.failures);
      throw error;
    } finally {
      await this.measureBacklog();
    }
  }

  private async batch(): Promise<number> {
    const receivers = this.config.webhooks.urls;
    const ids = await withTransaction(
      this.dataSource,
      async (tx) => {
        const { rows } = await sql<OutboxRow>(
          tx,
          `SELECT id, message_id, event_type, payload, created_at FROM notification_outbox
          WHERE NOT published ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
          [BATCH],
        );
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
    const { channel } = await this.connect();
    for (const row of rows) {
      const body = Buffer.from(JSON.stringify(envelope(row, publisherId)));
      for (const topic of topics) {
        channel.publish(exchange, `${topic}.info`, body, {
          contentType: 'application/json',
          contentEncoding: 'utf-8',
          persistent: true,
          messageId: row.message_id,
        });
      }
    }
    await within(TIMEOUT_MS, 'the broker confirming notifications', channel.waitForConfirms());
  }

  private async connect(): Promise<Broker> {
    if (this.broker !== null) return this.broker;
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<Broker> {
    const url = this.config.notify.url as string;
    const model = await within(
      TIMEOUT_MS,
      'connecting to the broker',
      connect(url, {
        timeout: TIMEOUT_MS,
      }),
    );
    try {
      const channel = await within(TIMEOUT_MS, 'opening a channel', model.createConfirmChannel());
      await within(
        TIMEOUT_MS,
        'declaring the exchange',
        channel.assertExchange(this.config.notify.exchange, 'topic', { durable: true }),
      );
      const broker = { model, channel };
      const lost = (): void => {
        if (this.broker === broker) this.broker = null;
      };
      // Without listeners these events would crash the process.
      model.on('error', lost);
      model.on('close', lost);
      channel.on('error', lost);
      channel.on('close', lost);
      this.broker = broker;
      return broker;
    } catch (error) {
      await model.close().catch(() => undefined);
      throw error;
    }
  }

  private async measureBacklog(): Promise<void> {
    try {
      const { rows } = await sql<{ n: string }>(
        this.dataSource.manager,
        `SELECT count(*) AS n FROM notification_outbox WHERE NOT published`,
      );
      this.metrics.notificationBacklog.set(Number(rows[0]?.n ?? 0));
    } catch {
      // The database is away too: the gauge keeps its last value.
    }
  }
}
