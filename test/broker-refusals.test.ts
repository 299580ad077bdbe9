import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { connect as amqpConnect, type ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { consumeNotifications } from './support/rabbit.js';
import { rabbitmqctl, TestVhost } from './support/rabbit-admin.js';
import { createLease, sleep, waitFor } from './support/seed.js';

jest.setTimeout(120_000);

interface Message {
  message_id: string;
}

/**
 * Each refusal made real on a vhost of this file's own: Climate stays up, serves leases,
 * counts and logs the refusal, and once the cause is gone every notification arrives once.
 */
describe('broker refusals', () => {
  const vhost = new TestVhost();
  const topic = `climate-test-${randomUUID()}`;
  let db: TestDatabase;
  let client: Client;
  const apps: TestApp[] = [];
  const consumers: ChannelModel[] = [];

  beforeAll(async () => {
    await vhost.create();
    db = await createTestDatabase();
    client = await connect(db.url);
  });
  afterAll(async () => {
    for (const c of consumers) await c.close().catch(() => undefined);
    for (const t of apps) await t.close();
    await client?.end();
    await db?.drop();
    await vhost.drop();
  });

  async function climate(url: string, exchange: string): Promise<TestApp> {
    const t = await startApp({
      databaseUrl: db.url,
      env: { NOTIFY_URL: url, NOTIFY_EXCHANGE: exchange, NOTIFY_TOPICS: topic },
    });
    apps.push(t);
    await client.query(`DELETE FROM notification_outbox`);
    return t;
  }

  async function listen(exchange: string): Promise<Message[]> {
    const received: Message[] = [];
    const consumer = await consumeNotifications(
      topic,
      (msg) => {
        const body = JSON.parse(msg.content.toString()) as { 'oslo.message': string };
        received.push(JSON.parse(body['oslo.message']) as Message);
      },
      exchange,
      vhost.url(),
    );
    consumers.push(consumer);
    return received;
  }

  async function outboxIds(): Promise<string[]> {
    const { rows } = await client.query<{ message_id: string }>(
      `SELECT message_id FROM notification_outbox ORDER BY id`,
    );
    return rows.map((r) => r.message_id);
  }

  async function problems(t: TestApp, reason: string): Promise<number> {
    const text = (await t.http.get('/metrics').expect(200)).text;
    const line = text
      .split('\n')
      .find((l) =>
        l.startsWith(`climate_broker_problems_total{link="notifications",reason="${reason}"}`),
      );
    return line === undefined ? 0 : Number(line.split(' ').pop());
  }

  /** Leases made while the publisher fails: all served, their notifications kept. */
  async function leasesWhileFailing(t: TestApp, n: number): Promise<string[]> {
    const publisher = t.app.get(NotificationPublisher);
    for (let i = 0; i < n; i++) {
      await createLease(t, {
        name: `r-${randomUUID()}`,
        start: '2030-06-01 00:00',
        end: '2030-06-01 01:00',
      });
      await expect(publisher.pump()).rejects.toThrow();
    }
    const pending = await outboxIds();
    expect(pending).toHaveLength(n);
    return pending;
  }

  /** Pumps (through the backoff) until the outbox is empty; then checks each arrived once. */
  async function deliveredOnce(t: TestApp, ids: string[], received: Message[]): Promise<void> {
    const publisher = t.app.get(NotificationPublisher);
    await waitFor(
      'an empty outbox',
      async () => {
        await publisher.pump().catch(() => undefined);
        return (await outboxIds()).length === 0 ? true : undefined;
      },
      60_000,
    );
    await waitFor('the notifications', () => (received.length >= ids.length ? true : undefined));
    await sleep(300);
    expect(received.map((m) => m.message_id).sort()).toEqual([...ids].sort());
  }

  it('should use as it is an exchange and queue declared durable elsewhere, logging it once', async () => {
    const exchange = `durable-${randomUUID()}`;
    const setup = await amqpConnect(vhost.url());
    const ch = await setup.createChannel();
    await ch.assertExchange(exchange, 'topic', { durable: true });
    await ch.assertQueue(`${topic}.info`, { durable: true, arguments: { 'x-max-priority': 3 } });
    await setup.close();
    const received = await listen(exchange);
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const t = await climate(vhost.url(), exchange);
    const publisher = t.app.get(NotificationPublisher);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      await createLease(t, { name: `d-${i}`, start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
      ids.push(...(await outboxIds()));
      expect(await publisher.pump()).toBe(1);
      await publisher.disconnect(); // each pass declares again
    }
    const asIs = warn.mock.calls
      .map((c) => c[0] as { msg?: string; object?: string })
      .filter((l) => l.msg === 'declared elsewhere with other arguments; used as it is');
    warn.mockRestore();
    expect(asIs.map((l) => l.object).sort()).toEqual([
      `exchange ${exchange}`,
      `queue ${topic}.info`,
    ]);
    await deliveredOnce(t, ids, received);
    expect(await problems(t, 'refused')).toBe(0);
    // oslo's queue kept them for a consumer that is not running yet.
    const counts = await rabbitmqctl('list_queues', '-p', vhost.name, 'name', 'messages');
    expect(counts).toMatch(new RegExp(`${topic}\\.info\\s+3`));
    await t.close();
    apps.pop();
  });

  it('should keep serving and deliver once when the user may not declare, then may', async () => {
    const exchange = `perm-${randomUUID()}`;
    const received = await listen(exchange);
    const { user, password } = await vhost.addUser();
    // Write and read, no configure: every declaration is refused with 403.
    await rabbitmqctl('set_permissions', '-p', vhost.name, user, '^$', '.*', '.*');
    const t = await climate(vhost.url(user, password), exchange);
    const ids = await leasesWhileFailing(t, 3);
    expect(await problems(t, 'access_refused')).toBeGreaterThanOrEqual(1);
    await rabbitmqctl('set_permissions', '-p', vhost.name, user, '.*', '.*', '.*');
    await deliveredOnce(t, ids, received);
    await t.close();
    apps.pop();
  });

  it('should keep serving and deliver once when the user has no permission on the vhost', async () => {
    const exchange = `vhost-${randomUUID()}`;
    const received = await listen(exchange);
    const { user, password } = await vhost.addUser();
    const t = await climate(vhost.url(user, password), exchange);
    const ids = await leasesWhileFailing(t, 2);
    expect(await problems(t, 'access_refused')).toBeGreaterThanOrEqual(1);
    await rabbitmqctl('set_permissions', '-p', vhost.name, user, '.*', '.*', '.*');
    await deliveredOnce(t, ids, received);
    await t.close();
    apps.pop();
  });

  it('should declare again and deliver once when the exchange is deleted under it (404)', async () => {
    const exchange = `deleted-${randomUUID()}`;
    const received = await listen(exchange);
    const t = await climate(vhost.url(), exchange);
    const publisher = t.app.get(NotificationPublisher);
    await createLease(t, { name: 'before', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    const first = await outboxIds();
    expect(await publisher.pump()).toBe(1);
    const admin = await amqpConnect(vhost.url());
    await (await admin.createChannel()).deleteExchange(exchange);
    await admin.close();
    await createLease(t, { name: 'after', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    const second = await outboxIds();
    await expect(publisher.pump()).rejects.toThrow(/404|NOT_FOUND|closed/i);
    expect(await problems(t, 'not_found')).toBeGreaterThanOrEqual(1);
    // The consumer's binding went with the exchange: bind a new one to the new exchange.
    const again = await listen(exchange);
    await deliveredOnce(t, second, again);
    expect(received.map((m) => m.message_id)).toEqual(first);
    await t.close();
    apps.pop();
  });

  it('should reconnect and deliver once when the broker closes the connection', async () => {
    const exchange = `forced-${randomUUID()}`;
    const received = await listen(exchange);
    const t = await climate(vhost.url(), exchange);
    const publisher = t.app.get(NotificationPublisher);
    await createLease(t, { name: 'one', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    const ids = await outboxIds();
    expect(await publisher.pump()).toBe(1);
    // Climate's connection, named so in the broker's list (not the test's consumer).
    const list = await rabbitmqctl('list_connections', 'pid', 'vhost', 'client_properties');
    const pids = list
      .split('\n')
      .filter((l) => l.includes(vhost.name) && l.includes('climate: the notification broker'))
      .map((l) => l.split('\t')[0]);
    expect(pids.length).toBeGreaterThanOrEqual(1);
    for (const pid of pids)
      await rabbitmqctl('close_connection', pid, 'test closes it').catch(() => '');
    await waitFor(
      'the loss to be seen',
      async () => ((await problems(t, 'connection_lost')) > 0 ? true : undefined),
      10_000,
    );
    await createLease(t, { name: 'two', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    ids.push(...(await outboxIds()));
    await deliveredOnce(t, ids, received);
    await t.close();
    apps.pop();
  });
});
