import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import {
  BrokerError,
  closeLink,
  declareLikeOslo,
  openChannel,
  openLink,
  problemOf,
  TIMEOUT_MS,
  reportUsedAsIs,
} from '../notifications/amqp-link.js';
import { errorMessage, within } from '../observability/bounded.js';
import { Metrics } from '../observability/metrics.js';
import { HealingService } from './healing.service.js';
import { followHostStates } from './host-states.js';
import { readServerActive, readServiceUpdate, type ServiceChange } from './nova-service-event.js';
import { InstanceUpkeep } from '../plugins/virtual-instance/instance-upkeep.js';
import { runsManager } from '../config/roles.js';

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
 * reservable again; an `instance.create.end` or `instance.update` to ACTIVE has a server
 * booted for a later lease shelved at once. The periodic poll stays the safety net (a compute service that dies
 * without anyone forcing it down sends nothing).
 *
 * Climate's own durable queue (NOVA_NOTIFY_QUEUE), bound to `<topic>.info` on Nova's
 * exchange, takes nothing from other listeners of Nova's topic queues, keeps what Nova
 * sends while Climate is down, and is shared by every replica. A message is acknowledged
 * only once its change and heal are committed; a failure puts it back for a retry.
 * Nova's exchange is declared as oslo.messaging does (used as it is when declared with
 * other arguments); a refusal, a reset or a silent connection (heartbeats) is logged,
 * counted and retried with backoff, never the end of the process.
 */
@Injectable()
export class NovaListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('nova-notifications');
  private model: ChannelModel | null = null;
  private stopped = false;
  private failures = 0;
  private lastProblem: string | null = null;
  /** Objects found declared with other arguments, logged once each. */
  private readonly usedAsIs = new Set<string>();
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
    private readonly upkeep: InstanceUpkeep,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.connected = new Promise((resolve) => (this.onConnected = resolve));
  }

  onApplicationBootstrap(): void {
    if (!runsManager(this.config) || this.config.novaNotify.url === null) return;
    void this.start();
  }

  /** Bounded: the message in hand gets TIMEOUT_MS, the close 2 s, then the socket goes. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.retry !== null) clearTimeout(this.retry);
    await within(this.handling, TIMEOUT_MS, 'the Nova notification in hand').catch(() => undefined);
    const model = this.model;
    this.model = null;
    if (model !== null) await closeLink(model);
  }

  /** Resolves once the listener has consumed from its queue (tests). */
  ready(): Promise<void> {
    return this.connected;
  }

  private async start(): Promise<void> {
    if (this.stopped) return;
    const { url, exchange, topics, queue, durable } = this.config.novaNotify;
    let model: ChannelModel | null = null;
    let live = false;
    const lost = (error: unknown): void => {
      if (!live) return;
      live = false;
      this.lost(model as ChannelModel, error);
    };
    try {
      model = await openLink(amqpUrl(url as string), "Nova's broker", { lost });
      // Climate's own queue is durable whatever Nova does: it keeps what Nova sends while
      // Climate is down.
      const asIs = await within(
        declareLikeOslo(model, {
          exchange,
          durable,
          queues: topics.map((topic) => ({
            name: queue,
            routingKey: `${topic}.info`,
            durable: true,
          })),
        }),
        TIMEOUT_MS,
        'declaring',
      );
      reportUsedAsIs(asIs, this.usedAsIs, (entry) => this.logger.warn(entry));
      const channel = await openChannel(model, false, lost);
      await channel.prefetch(PREFETCH);
      await channel.consume(queue, (msg) => {
        if (msg !== null) this.handling = this.handling.then(() => this.handle(channel, msg));
        // null: the broker cancelled the consumer (queue deleted): start again.
        else lost(new BrokerError(`queue ${queue}`, new Error('consumer cancelled by the broker')));
      });
      if (this.stopped) throw new Error('stopping');
      this.model = model;
      live = true;
      this.metrics.brokerConnected.set({ link: 'nova' }, 1);
      if (this.failures > 0) this.logger.log({ msg: "Nova's broker reachable again" });
      this.failures = 0;
      this.onConnected();
    } catch (error) {
      if (model !== null) await closeLink(model);
      this.again(error);
    }
  }

  private lost(model: ChannelModel, error: unknown): void {
    this.metrics.brokerConnected.set({ link: 'nova' }, 0);
    if (this.model === model) this.model = null;
    void closeLink(model);
    if (this.stopped) return;
    this.again(error);
  }

  /** Tries again later, backing off; warns once per outage and kind of failure. */
  private again(error: unknown): void {
    if (this.stopped) return;
    const problem = problemOf(error);
    this.metrics.brokerProblems.inc({ link: 'nova', reason: problem });
    if (this.failures === 0 || problem !== this.lastProblem) {
      this.logger.warn({
        msg: "not listening to Nova's notifications; retrying (the periodic poll still runs)",
        problem,
        object:
          error instanceof BrokerError
            ? error.object
            : `exchange ${this.config.novaNotify.exchange}`,
        error: errorMessage(error),
      });
    }
    this.lastProblem = problem;
    this.failures++;
    const delay = Math.min(MAX_BACKOFF_MS, 250 * 2 ** this.failures);
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.start(), delay);
    this.retry.unref();
  }

  private async handle(channel: Channel, msg: ConsumeMessage): Promise<void> {
    if (this.stopped) return;
    const news = readServiceUpdate(msg.content);
    const active = 'ignored' in news ? readServerActive(msg.content) : null;
    if (active !== null) {
      // A server booted for a later lease is shelved now, not at the next tick; not
      // awaited: a shelve may take minutes, and the tick retries what this misses.
      void this.upkeep.shelveNew(active);
      channel.ack(msg);
      return;
    }
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
