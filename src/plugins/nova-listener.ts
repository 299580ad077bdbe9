import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { within } from '../observability/bounded.js';
import { Metrics } from '../observability/metrics.js';
import { HealingService } from './healing.service.js';
import { followHostStates } from './host-states.js';
import { readServiceUpdate, type ServiceChange } from './nova-service-event.js';

/** Longest a connect or a queue set-up may take. */
const TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;
/** Messages taken from the broker ahead of the one being handled (handled one at a time). */
const PREFETCH = 32;

/** Nova's transport_url names RabbitMQ `rabbit://`; amqplib wants `amqp://`. */
function amqpUrl(url: string): string {
  return url.replace(/^rabbit:\/\//, 'amqp://');
}

/**
 * Learns host failures from Nova at once (manager and `all` roles, when NOVA_NOTIFY_URL is
 * set): a `service.update` saying a compute service is disabled or forced down makes its
 * host unreservable and heals its reservations; one saying it is back makes the host
 * reservable again. The periodic poll stays the safety net (a compute service that dies
 * without anyone forcing it down sends nothing).
 *
 * Climate's own durable queue (NOVA_NOTIFY_QUEUE), bound to `<topic>.info` on Nova's
 * exchange, takes nothing from other listeners of Nova's topic queues, keeps what Nova
 * sends while Climate is down, and is shared by every replica. A message is acknowledged
 * only once its change and heal are committed; a failure puts it back for a retry.
 */
@Injectable()
export class NovaListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('nova-notifications');
  private model: ChannelModel | null = null;
  private stopped = false;
  private failures = 0;
  private retry: NodeJS.Timeout | null = null;
  /** Messages are handled in the order they came, one at a time. */
  private handling: Promise<void> = Promise.resolve();
  private connected: Promise<void>;
  private onConnected: () => void = () => undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly healing: HealingService,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.connected = new Promise((resolve) => (this.onConnected = resolve));
  }

  onApplicationBootstrap(): void {
    if (this.config.role === 'api' || this.config.novaNotify.url === null) return;
    void this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.retry !== null) clearTimeout(this.retry);
    await this.handling;
    await this.model?.close().catch(() => undefined);
  }

  /** Resolves once the listener has consumed from its queue (tests). */
  ready(): Promise<void> {
    return this.connected;
  }

  private async start(): Promise<void> {
    const { url, exchange, topics, queue } = this.config.novaNotify;
    let model: ChannelModel | null = null;
    try {
      model = await within(connect(amqpUrl(url as string)), TIMEOUT_MS, "Nova's broker");
      model.on('error', () => undefined);
      model.on('close', () => this.lost(model as ChannelModel));
      const channel = await within(this.bind(model, exchange, topics, queue), TIMEOUT_MS, 'bind');
      await channel.prefetch(PREFETCH);
      await channel.consume(queue, (msg) => {
        if (msg !== null) this.handling = this.handling.then(() => this.handle(channel, msg));
      });
      this.model = model;
      if (this.failures > 0) this.logger.log({ msg: "Nova's broker reachable again" });
      this.failures = 0;
      this.onConnected();
    } catch (error) {
      await model?.close().catch(() => undefined);
      this.again(error);
    }
  }

  /** Climate's queue, bound to Nova's exchange (declared as oslo.messaging would, if absent). */
  private async bind(
    model: ChannelModel,
    exchange: string,
    topics: string[],
    queue: string,
  ): Promise<Channel> {
    const probe = await model.createChannel();
    probe.on('error', () => undefined);
    const exists = await probe.checkExchange(exchange).then(
      () => true,
      () => false,
    );
    if (exists) await probe.close().catch(() => undefined);
    const channel = await model.createChannel();
    if (!exists) await channel.assertExchange(exchange, 'topic', { durable: false });
    await channel.assertQueue(queue, { durable: true });
    for (const topic of topics) await channel.bindQueue(queue, exchange, `${topic}.info`);
    return channel;
  }

  private lost(model: ChannelModel): void {
    if (this.stopped || this.model !== model) return;
    this.model = null;
    this.again(new Error("the connection to Nova's broker closed"));
  }

  /** Tries again later, backing off; warns once per outage. */
  private again(error: unknown): void {
    if (this.stopped) return;
    if (this.failures === 0) {
      this.logger.warn({
        msg: "not listening to Nova's notifications; retrying (the periodic poll still runs)",
        error: error instanceof Error ? error.message : String(error),
      });
    }
    this.failures++;
    const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** this.failures);
    this.retry = setTimeout(() => void this.start(), delay);
    this.retry.unref();
  }

  private async handle(channel: Channel, msg: ConsumeMessage): Promise<void> {
    if (this.stopped) return;
    const news = readServiceUpdate(msg.content);
    if ('ignored' in news) {
      this.metrics.novaServiceEvents.inc({ result: 'ignored' });
      this.logger.debug({ msg: 'Nova notification ignored', why: news.ignored });
      channel.ack(msg);
      return;
    }
    try {
      const result = await this.apply(news);
      this.metrics.novaServiceEvents.inc({ result });
      channel.ack(msg);
    } catch (error) {
      this.metrics.novaServiceEvents.inc({ result: 'failed' });
      this.logger.warn({
        msg: 'Nova service.update not applied; retried',
        host: news.host,
        error: error instanceof Error ? error.message : String(error),
      });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // The channel may have gone with the connection: the broker redelivers then.
      try {
        channel.nack(msg, false, true);
      } catch {
        // redelivered on the next connection
      }
    }
  }

  /** Marks the host and heals; a heal also runs when nothing changed (a retried message). */
  private async apply(news: ServiceChange): Promise<'down' | 'up' | 'unchanged'> {
    const hosts = [news.host];
    const changed = await followHostStates(
      this.dataSource.manager,
      'service_name',
      news.down ? hosts : [],
      news.down ? [] : hosts,
      this.clock.now(),
    );
    if (changed > 0) {
      this.logger.warn({
        msg: news.down ? 'compute service down' : 'compute service up',
        host: news.host,
      });
    }
    await this.healing.heal();
    if (changed === 0) return 'unchanged';
    return news.down ? 'down' : 'up';
  }
}
