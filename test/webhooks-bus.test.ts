import { randomUUID } from 'node:crypto';
import type { ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { WebhookDispatcher } from '../src/notifications/webhook-dispatcher.js';
import { WebhookSender } from '../src/notifications/webhook-sender.js';
import { WebhookStore } from '../src/notifications/webhook-store.js';
import { PeriodicJobs } from '../src/observability/periodic-jobs.js';
import { Metrics } from '../src/observability/metrics.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { consumeNotifications } from './support/rabbit.js';
import { createLeases, sleep, waitFor } from './support/seed.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

jest.setTimeout(90_000);

interface OnBus {
  raw: string;
  message_id: string;
  payload: { id: string };
}

describe('webhooks beside the bus', () => {
  const topic = `climate-test-${randomUUID()}`;
  const proxy = new TcpProxy('127.0.0.1', 5672);
  const receiver = new WebhookReceiver();
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let publisher: NotificationPublisher;
  let dispatcher: WebhookDispatcher;
  let consumer: ChannelModel;
  const bus: OnBus[] = [];

  beforeAll(async () => {
    await proxy.listen();
    await receiver.listen();
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        NOTIFY_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}`,
        NOTIFY_TOPICS: topic,
        WEBHOOK_URLS: receiver.url,
        WEBHOOK_SECRET: 'webhook-test-secret-0123456789',
      },
    });
    client = await connect(db.url);
    publisher = t.app.get(NotificationPublisher);
    dispatcher = t.app.get(WebhookDispatcher);
    consumer = await consumeNotifications(topic, (msg) => {
      const raw = (JSON.parse(msg.content.toString()) as { 'oslo.message': string })[
        'oslo.message'
      ];
      bus.push({ raw, ...(JSON.parse(raw) as Omit<OnBus, 'raw'>) });
    });
  });
  afterAll(async () => {
    await consumer?.close();
    await client?.end();
    await t?.close();
    await proxy.cut();
    await receiver.down();
    await db?.drop();
  });

  async function outbox(): Promise<{ published: boolean }[]> {
    const { rows } = await client.query(`SELECT published FROM notification_outbox ORDER BY id`);
    return rows as { published: boolean }[];
  }

  async function busCount(n: number): Promise<void> {
    await waitFor(`${n} messages on the bus`, () => (bus.length >= n ? true : undefined));
    await sleep(100);
    expect(bus.length).toBe(n);
  }

  /** Both sinks pass until each has everything, past any retry wait. */
  async function deliverAll(): Promise<void> {
    for (let i = 0; i < 50 && (await outbox()).length > 0; i++) {
      await publisher.pump().catch(() => undefined);
      await dispatcher.pump();
      t.clock.advance(61_000);
      await sleep(50);
    }
    expect(await outbox()).toEqual([]);
  }

  it('should send each change to both sinks, the same JSON, and keep it until both have it', async () => {
    const fromBus = bus.length;
    const fromHook = receiver.got.length;
    await createLeases([t], 2, (i) => ({
      name: `both-${i}`,
      start: '2030-06-01 00:00',
      end: '2030-06-01 01:00',
    }));
    // The bus first: its rows stay, marked, for the receiver.
    expect(await publisher.pump()).toBe(2);
    await busCount(fromBus + 2);
    expect(await outbox()).toEqual([{ published: true }, { published: true }]);
    expect(await publisher.pump()).toBe(0);
    await dispatcher.pump();
    expect(await outbox()).toEqual([]);

    // The receiver first: the rows wait for the bus.
    await createLeases([t], 1, () => ({
      name: 'hook-first',
      start: '2030-06-01 00:00',
      end: '2030-06-01 01:00',
    }));
    await dispatcher.pump();
    expect(await outbox()).toEqual([{ published: false }]);
    expect(await publisher.pump()).toBe(1);
    await busCount(fromBus + 3);
    expect(await outbox()).toEqual([]);

    const hooked = receiver.got.slice(fromHook).map((d) => d.raw);
    expect(hooked).toHaveLength(3);
    expect(new Set(hooked)).toEqual(new Set(bus.slice(fromBus).map((m) => m.raw)));
  });

  it('should keep publishing to the bus while the receiver is down, and send the receiver everything after', async () => {
    const fromBus = bus.length;
    const fromHook = receiver.got.length;
    await receiver.down();
    const leases = await createLeases([t], 30, (i) => ({
      name: `hook-down-${i}`,
      start: '2030-07-01 00:00',
      end: '2030-07-01 01:00',
    }));
    await dispatcher.pump();
    expect(await publisher.pump()).toBe(30);
    await busCount(fromBus + 30);
    // Published once: the rows kept for the receiver are not sent on the bus again.
    expect(await publisher.pump()).toBe(0);
    expect(await outbox()).toHaveLength(30);
    await receiver.listen();
    await deliverAll();
    const got = receiver.got.slice(fromHook);
    expect(got).toHaveLength(30);
    expect(new Set(got.map((d) => d.message.payload.id))).toEqual(new Set(leases.map((l) => l.id)));
    await sleep(100);
    expect(bus.length).toBe(fromBus + 30);
  });

  it('should keep delivering webhooks while the broker is away, and publish everything after', async () => {
    const fromBus = bus.length;
    const fromHook = receiver.got.length;
    await proxy.cut();
    const leases = await createLeases([t], 30, (i) => ({
      name: `bus-down-${i}`,
      start: '2030-08-01 00:00',
      end: '2030-08-01 01:00',
    }));
    await expect(publisher.pump()).rejects.toThrow();
    await dispatcher.pump();
    expect(receiver.got.slice(fromHook)).toHaveLength(30);
    expect((await outbox()).filter((r) => !r.published)).toHaveLength(30);
    await proxy.listen();
    await deliverAll();
    await busCount(fromBus + 30);
    expect(new Set(bus.slice(fromBus).map((m) => m.payload.id))).toEqual(
      new Set(leases.map((l) => l.id)),
    );
    expect(receiver.got.slice(fromHook)).toHaveLength(30);
  });

  it('should clear what is done with: rows a crash left, and published rows once webhooks are off', async () => {
    await receiver.down();
    await createLeases([t], 3, (i) => ({
      name: `left-${i}`,
      start: '2030-09-01 00:00',
      end: '2030-09-01 01:00',
    }));
    expect(await publisher.pump()).toBe(3);
    // A manager that died between recording a delivery and deleting the row.
    await client.query(
      `INSERT INTO webhook_deliveries (outbox_id, receiver, delivered_at)
       SELECT id, $1, now() FROM notification_outbox ORDER BY id LIMIT 1`,
      [receiver.url],
    );
    const store = t.app.get(WebhookStore);
    expect(await store.sweep([receiver.url], true)).toBe(1);
    expect(await outbox()).toEqual([{ published: true }, { published: true }]);

    // Started again without webhooks: rows the bus published wait for nobody.
    const off = new WebhookDispatcher(
      store,
      new WebhookSender(),
      t.app.get(DataSource),
      t.clock,
      new Metrics(),
      { ...t.config, webhooks: { ...t.config.webhooks, urls: [] } },
      t.app.get(PeriodicJobs),
    );
    await off.onApplicationBootstrap();
    expect(await outbox()).toEqual([]);
    await receiver.listen();
  });
});
