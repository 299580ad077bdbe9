import { randomUUID } from 'node:crypto';
import type { ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { NovaListener } from '../src/events/nova-listener.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { consumeNotifications } from './support/rabbit.js';
import { TestVhost } from './support/rabbit-admin.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { createLease, sleep, waitFor } from './support/seed.js';

jest.setTimeout(120_000);

/** Issue 31.1: a broker connection that goes silent (no FIN, no RST) is found and replaced. */
describe('a silent broker partition', () => {
  const vhost = new TestVhost();
  const topic = `climate-test-${randomUUID()}`;
  const exchange = `partition-${randomUUID()}`;
  const proxy = new TcpProxy('127.0.0.1', 5672);
  let db: TestDatabase;
  let client: Client;
  let t: TestApp;
  let consumer: ChannelModel;
  const received: string[] = [];

  beforeAll(async () => {
    await vhost.create();
    await proxy.listen();
    db = await createTestDatabase();
    client = await connect(db.url);
    // Heartbeats every second: a dead connection is seen in 2-3 s.
    const url = `amqp://guest:guest@127.0.0.1:${proxy.port}/${encodeURIComponent(vhost.name)}?heartbeat=1`;
    t = await startApp({
      databaseUrl: db.url,
      env: { NOTIFY_URL: url, NOTIFY_EXCHANGE: exchange, NOTIFY_TOPICS: topic },
    });
    consumer = await consumeNotifications(
      topic,
      (msg) => {
        const body = JSON.parse(msg.content.toString()) as { 'oslo.message': string };
        received.push((JSON.parse(body['oslo.message']) as { message_id: string }).message_id);
      },
      exchange,
      vhost.url(),
    );
  });
  afterAll(async () => {
    await consumer?.close();
    await t?.close();
    await client?.end();
    await proxy.cut();
    await db?.drop();
    await vhost.drop();
  });

  async function outboxIds(): Promise<string[]> {
    const { rows } = await client.query<{ message_id: string }>(
      `SELECT message_id FROM notification_outbox ORDER BY id`,
    );
    return rows.map((r) => r.message_id);
  }

  async function metric(name: string): Promise<number> {
    const text = (await t.http.get('/metrics').expect(200)).text;
    const line = text.split('\n').find((l) => l.startsWith(name));
    return line === undefined ? NaN : Number(line.split(' ').pop());
  }

  const lease = (name: string) =>
    createLease(t, { name, start: '2030-06-01 00:00', end: '2030-06-01 01:00' });

  it('should see the dead connection, reconnect, drain the backlog and report it truly', async () => {
    const publisher = t.app.get(NotificationPublisher);
    await lease('before');
    expect(await publisher.pump()).toBe(1);
    await waitFor('the first notification', () => (received.length === 1 ? true : undefined));

    proxy.hold();
    for (let i = 0; i < 5; i++) await lease(`held-${i}`);
    const held = await outboxIds();
    expect(held).toHaveLength(5);
    // The gauge reads the outbox: true while the publisher is stuck.
    expect(await metric('climate_notification_backlog ')).toBe(5);
    const stuck = publisher.pump();
    stuck.catch(() => undefined);
    // Heartbeats (or the confirm timeout) end the pass; it fails rather than hangs.
    const started = Date.now();
    await expect(stuck).rejects.toThrow();
    const detectedMs = Date.now() - started;
    // Sooner than the 10 s confirm timeout: the heartbeats saw it.
    expect(detectedMs).toBeLessThan(9_500);
    expect(await metric('climate_broker_connected{link="notifications"}')).toBe(0);

    // The network is back for new connections (the held ones stay dead).
    proxy.mode = 'forward';
    await waitFor(
      'the backlog drained',
      async () => {
        await publisher.pump().catch(() => undefined);
        return (await outboxIds()).length === 0 ? true : undefined;
      },
      60_000,
    );
    await waitFor('the held notifications', () => (received.length >= 6 ? true : undefined));
    await sleep(300);
    expect(received.slice(1).sort()).toEqual([...held].sort());
    expect(await metric('climate_notification_backlog ')).toBe(0);
    expect(await metric('climate_broker_connected{link="notifications"}')).toBe(1);
  });

  it('should shut down within its bound when its live broker connections go silent', async () => {
    // An app of its own whose heartbeats (60 s) cannot find the silence before the test
    // ends: only the bounded close can end its shutdown in time.
    const silent = new TcpProxy('127.0.0.1', 5672);
    await silent.listen();
    const base = `127.0.0.1:${silent.port}/${encodeURIComponent(vhost.name)}?heartbeat=60`;
    const app = await startApp({
      databaseUrl: db.url,
      env: {
        NOTIFY_URL: `amqp://guest:guest@${base}`,
        NOTIFY_EXCHANGE: exchange,
        NOTIFY_TOPICS: topic,
        NOVA_NOTIFY_URL: `rabbit://guest:guest@${base}`,
        NOVA_NOTIFY_EXCHANGE: `nova-${randomUUID()}`,
        NOVA_NOTIFY_QUEUE: `climate-nova-${randomUUID()}`,
      },
    });
    let closed = false;
    let closing: Promise<unknown> = Promise.resolve();
    try {
      await app.app.get(NovaListener).ready();
      await createLease(app, { name: 'last', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
      // a live publisher connection, idle when the network goes silent
      expect(await app.app.get(NotificationPublisher).pump()).toBeGreaterThanOrEqual(1);
      const text = (await app.http.get('/metrics').expect(200)).text;
      expect(text).toContain('climate_broker_connected{link="notifications"} 1');
      expect(text).toContain('climate_broker_connected{link="nova"} 1');
      silent.hold();
      const started = Date.now();
      closing = app.close().then(() => (closed = true));
      // Caps the wait for a shutdown that hangs (until a heartbeat sees the silence).
      await Promise.race([closing, sleep(40_000)]);
      const tookMs = Date.now() - started;
      expect(closed).toBe(true);
      // docs/operations.md: about 13 s at most; each close is 2 s, then its socket goes.
      expect(tookMs).toBeLessThan(13_000);
    } finally {
      await silent.cut();
      // A shutdown that hung (the failure) is given a bounded while once the sockets go.
      if (!closed) await Promise.race([closing, sleep(5_000)]);
    }
  });
});
