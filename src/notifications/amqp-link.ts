import type { Socket } from 'node:net';
import { connect, type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { errorMessage, TimeoutError, within } from '../observability/bounded.js';

/** Longest a connect, a channel or a declaration may take. */
export const TIMEOUT_MS = 10_000;
/** Longest a close may wait for the broker's close-ok before the socket is destroyed. */
export const CLOSE_TIMEOUT_MS = 2_000;
/**
 * Seconds between AMQP heartbeats unless the URL sets `?heartbeat=`: a connection that
 * carries nothing for two to three of them is declared dead (amqplib's check).
 */
export const HEARTBEAT_SECONDS = 10;

/** Why the broker failed us, as the `reason` label of climate_broker_problems_total. */
export type BrokerProblem =
  | 'refused' // 406: declared elsewhere with other arguments
  | 'access_refused' // 403, 530: no permission on the vhost or the object
  | 'not_found' // 404: a missing exchange or queue
  | 'blocked' // connection.blocked: a memory or disk alarm
  | 'channel_closed' // the broker closed a channel for another reason
  | 'heartbeat_timeout' // nothing heard for two heartbeats: a silent partition
  | 'timeout' // no answer in time (connect, declare, confirms)
  | 'unreachable' // no connection (refused, no route, DNS)
  | 'connection_lost'; // the connection closed or was reset under us

/** A failure on one broker object (`exchange openstack`, `queue notifications.info`, …). */
export class BrokerError extends Error {
  constructor(
    readonly object: string,
    readonly inner: unknown,
  ) {
    super(`${object}: ${errorMessage(inner)}`);
  }
}

/** The AMQP reply code in an amqplib error (`.code`, or `NNN (NAME)` in the message). */
function replyCode(error: unknown): number | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'number') return code;
  const match = /\b([3-5]\d\d) \([A-Z_-]+\)/.exec(errorMessage(error));
  return match ? Number(match[1]) : null;
}

export function problemOf(error: unknown): BrokerProblem {
  const inner = error instanceof BrokerError ? error.inner : error;
  if (inner instanceof TimeoutError) return 'timeout';
  const code = replyCode(inner);
  if (code === 406) return 'refused';
  if (code === 403 || code === 530) return 'access_refused';
  if (code === 404) return 'not_found';
  if (code !== null && code !== 320) return 'channel_closed';
  const message = errorMessage(inner);
  if (/heartbeat timeout/i.test(message)) return 'heartbeat_timeout';
  // amqplib drops the broker's words here: the vhost refused (no permission, or none such).
  if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(message)) return 'access_refused';
  const sys = (inner as { code?: unknown } | null)?.code;
  if (
    ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(String(sys))
  )
    return 'unreachable';
  return 'connection_lost';
}

/** The URL with `heartbeat` set, unless it sets one (0 turns heartbeats off: not advised). */
export function withHeartbeat(url: string, seconds = HEARTBEAT_SECONDS): string {
  if (/[?&]heartbeat=/.test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}heartbeat=${seconds}`;
}

export interface LinkHandlers {
  /** The connection or a channel is gone (error, close, heartbeat): called once per link. */
  lost(error: unknown): void;
  blocked?(reason: string): void;
  unblocked?(): void;
}

function socketOf(model: ChannelModel): Socket | undefined {
  return (model as unknown as { connection?: { stream?: Socket } }).connection?.stream;
}

/**
 * A connection with its handlers attached before anything can happen on it: without an
 * 'error' listener amqplib's events would end the process.
 */
export async function openLink(
  url: string,
  what: string,
  handlers: LinkHandlers,
): Promise<ChannelModel> {
  const connecting = connect(withHeartbeat(url), {
    timeout: TIMEOUT_MS,
    // Named in the broker's connection list (rabbitmqctl list_connections client_properties).
    clientProperties: { connection_name: `climate: ${what}` },
  });
  let model: ChannelModel;
  try {
    model = await within(connecting, TIMEOUT_MS, `connecting to ${what}`);
  } catch (error) {
    // A connect that answers after the timeout is closed at once.
    connecting.then(
      (late) => {
        late.on('error', () => undefined);
        void closeLink(late);
      },
      () => undefined,
    );
    throw new BrokerError(`connection to ${what}`, error);
  }
  let gone = false;
  const lost = (error: unknown): void => {
    if (gone) return;
    gone = true;
    handlers.lost(error ?? new Error(`the connection to ${what} closed`));
    // After a heartbeat timeout amqplib only half-closes a socket nobody answers on.
    socketOf(model)?.destroy();
  };
  model.on('error', lost);
  model.on('close', (error: unknown) => lost(error));
  model.on('blocked', (reason: string) => handlers.blocked?.(reason));
  model.on('unblocked', () => handlers.unblocked?.());
  return model;
}

/** A channel with its handlers attached at once (`confirm` for publisher confirms). */
export async function openChannel(
  model: ChannelModel,
  confirm: true,
  lost: (error: unknown) => void,
): Promise<ConfirmChannel>;
export async function openChannel(
  model: ChannelModel,
  confirm: false,
  lost: (error: unknown) => void,
): Promise<Channel>;
export async function openChannel(
  model: ChannelModel,
  confirm: boolean,
  lost: (error: unknown) => void,
): Promise<Channel> {
  const opening = confirm ? model.createConfirmChannel() : model.createChannel();
  const channel = await within(opening, TIMEOUT_MS, 'opening a channel');
  channel.on('error', lost);
  channel.on('close', () => lost(new Error('channel closed')));
  return channel;
}

/** Closes, waiting at most CLOSE_TIMEOUT_MS for the broker, then destroys the socket. */
export async function closeLink(model: ChannelModel): Promise<void> {
  await within(model.close(), CLOSE_TIMEOUT_MS, 'closing').catch(() => undefined);
  socketOf(model)?.destroy();
}

export interface Declarations {
  exchange: string;
  /** oslo.messaging's `amqp_durable_queues`: the exchange and queues are durable. */
  durable: boolean;
  /** Queues bound to the exchange with their own name as routing key, unless given. */
  queues: { name: string; routingKey?: string; durable?: boolean }[];
}

/**
 * Declares a topic exchange and its queues as oslo.messaging does (durable as asked, never
 * auto-deleted, no arguments). An object that exists with other arguments (406) is used as
 * it is, after a passive check; each such object is returned with the broker's words.
 */
export async function declareLikeOslo(
  model: ChannelModel,
  spec: Declarations,
): Promise<{ object: string; reason: string }[]> {
  const asIs: { object: string; reason: string }[] = [];
  // A refusal closes the channel it came on: each attempt gets a fresh one.
  const channels: Channel[] = [];
  const fresh = async (): Promise<Channel> => {
    const channel = await openChannel(model, false, () => undefined);
    channels.push(channel);
    return channel;
  };
  const ensure = async (
    object: string,
    assert: (c: Channel) => Promise<unknown>,
    check: (c: Channel) => Promise<unknown>,
  ): Promise<Channel> => {
    let channel = await fresh();
    try {
      await assert(channel);
    } catch (error) {
      if (problemOf(error) !== 'refused') throw new BrokerError(object, error);
      channel = await fresh();
      await check(channel).catch((e: unknown) => {
        throw new BrokerError(object, e);
      });
      asIs.push({ object, reason: errorMessage(error) });
    }
    return channel;
  };
  try {
    const { exchange, durable } = spec;
    let channel = await ensure(
      `exchange ${exchange}`,
      (c) => c.assertExchange(exchange, 'topic', { durable, autoDelete: false }),
      (c) => c.checkExchange(exchange),
    );
    for (const queue of spec.queues) {
      const options = { durable: queue.durable ?? durable, autoDelete: false };
      channel = await ensure(
        `queue ${queue.name}`,
        (c) => c.assertQueue(queue.name, options),
        (c) => c.checkQueue(queue.name),
      );
      await channel.bindQueue(queue.name, exchange, queue.routingKey ?? queue.name).catch((e) => {
        throw new BrokerError(`binding of queue ${queue.name} to ${exchange}`, e);
      });
    }
    return asIs;
  } finally {
    for (const channel of channels) {
      const closing = Promise.resolve().then(() => channel.close());
      await within(closing, CLOSE_TIMEOUT_MS, 'closing').catch(() => undefined);
    }
  }
}

/**
 * Says once per object (across reconnects) that it was declared elsewhere with other
 * arguments and is used as it is: `seen` is the caller's memory of what it said.
 */
export function reportUsedAsIs(
  asIs: { object: string; reason: string }[],
  seen: Set<string>,
  warn: (entry: { msg: string; object: string; reason: string }) => void,
): void {
  for (const { object, reason } of asIs) {
    if (seen.has(object)) continue;
    seen.add(object);
    warn({ msg: 'declared elsewhere with other arguments; used as it is', object, reason });
  }
}
