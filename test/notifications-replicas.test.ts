import { randomUUID } from 'node:crypto';
import type { ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { PeriodicJobs } from '../src/observability/periodic-jobs.js';
import { OutboxPruner } from '../src/notifications/outbox-pruner.js';
import { describeNotifications } from '../src/observability/lifecycle.js';
import { WebhookDispatcher } from '../src/notifications/webhook-dispatcher.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { BROKER, consumeNotifications } from './support/rabbit.js';
import { sleep, waitFor } from './support/seed.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

jest.setTimeout(90_000);

const SECRET = 'replicas-test-secret-0123456789';
const HOUR = 3600_000;

interface Message {
  message_id: string;
  event_type: string;
  payload: { id: string };
}

describe('notifications whichever replica has which setting', () => {
  const topic = `climate-test-${randomUUID()}`;
  const receiver = new WebhookReceiver();
  const clock = new FakeClock(new Date('2030-01-01T00:00:00Z'));
  const bus: Message[] = [];
  let db: TestDatabase;
  let client: Client;
  let api: TestApp;
  let manager: TestApp;
  let consumer: ChannelModel;

  beforeAll(async () => {
    await receiver.listen();
    db = await createTestDatabase();
    client = await connect(db.url);
    // The API replica knows nothing of the bus or the receivers; the manager knows both.
    api = await startApp({ databaseUrl: db.url, clock, env: { ROLE: 'api' } });
    manager = await startApp({
      databaseUrl: db.url,
      clock,
      env: {
        ROLE: 'manager',
        NOTIFY_URL: BROKER,
        NOTIFY_TOPICS: topic,
        WEBHOOK_URLS: receiver.url,
        WEBHOOK_SECRET: SECRET,
      },
    });
    consumer = await consumeNotifications(topic, (msg) => {
      const body = JSON.parse(msg.content.toString()) as { 'oslo.message': string };
      bus.push(JSON.parse(body['oslo.message']) as Message);
    });
  });
  afterAll(async () => {
    await consumer?.close();
    await client?.end();
    await api?.close();
    await manager?.close();
    await receiver.down();
    await db?.drop();
  });

  async function outboxSize(): Promise<number> {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM notification_outbox`);
    return rows[0].n as number;
  }

  it('should deliver every create, update and delete made on an API replica without NOTIFY_URL or WEBHOOK_URLS', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.http
        .post('/v1/leases')
        .send({ name: `r-${i}`, start_date: '2030-01-02 00:00', end_date: '2030-01-02 01:00' })
        .expect(201);
      made.push(res.body.lease.id as string);
    }
    await api.http.put(`/v1/leases/${made[0]}`).send({ name: 'renamed' }).expect(200);
    await api.http.delete(`/v1/leases/${made[1]}`).expect(204);
    expect(await outboxSize()).toBe(5);

    await manager.app.get(NotificationPublisher).pump();
    await manager.app.get(WebhookDispatcher).pump();
    await waitFor('the bus', () => (bus.length >= 5 ? true : undefined), 20_000);
    await sleep(200);
    const want = [
      [made[0], 'lease.create'],
      [made[1], 'lease.create'],
      [made[2], 'lease.create'],
      [made[0], 'lease.update'],
      [made[1], 'lease.delete'],
    ];
    const seen = (messages: Message[]) => messages.map((m) => [m.payload.id, m.event_type]);
    expect(seen(bus)).toEqual(want);
    // Webhooks keep each lease's order; leases go out side by side.
    const sorted = (pairs: string[][]) =>
      [...pairs].sort((x, y) => x.join().localeCompare(y.join()));
    expect(sorted(seen(receiver.taken.map((d) => d.message)))).toEqual(sorted(want));
    expect(await outboxSize()).toBe(0);
  });

  it('should say in the start line which replica sends notifications and webhooks', () => {
    expect(describeNotifications(api.config)).toEqual({
      notifications: 'outbox only: the managers send them',
    });
    expect(describeNotifications(manager.config)).toEqual({
      notifications: 'on',
      webhooks: 'on (1 receiver)',
    });
  });
});

describe('the outbox where no manager can send', () => {
  const clock = new FakeClock(new Date('2031-01-01T00:00:00Z'));
  let db: TestDatabase;
  let client: Client;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    app = await startApp({ databaseUrl: db.url, clock, env: { NOTIFY_RETENTION_HOURS: '72' } });
  });
  afterAll(async () => {
    await client?.end();
    await app?.close();
    await db?.drop();
  });

  async function outboxIds(): Promise<string[]> {
    const { rows } = await client.query(`SELECT id FROM notification_outbox ORDER BY id`);
    return rows.map((r: { id: string }) => r.id);
  }

  it('should keep rows for NOTIFY_RETENTION_HOURS, then prune them, when nothing is configured to send', async () => {
    const pruner = app.app.get(OutboxPruner);
    expect(pruner.prunes).toBe(true);
    const lease = async (name: string) =>
      app.http
        .post('/v1/leases')
        .send({ name, start_date: '2031-06-01 00:00', end_date: '2031-06-01 01:00' })
        .expect(201);
    await lease('old');
    const [old] = await outboxIds();
    clock.advance(2 * HOUR);
    await lease('newer');
    expect(await outboxIds()).toHaveLength(2);

    clock.advance(70 * HOUR - 1000);
    expect(await pruner.prune()).toBe(0);
    clock.advance(2000);
    expect(await pruner.prune()).toBe(1);
    const left = await outboxIds();
    expect(left).toHaveLength(1);
    expect(left).not.toContain(old);
  });

  it('should not prune where the manager can send, nor on an API replica', () => {
    const pruner = (over: Record<string, string>) =>
      new OutboxPruner(
        app.app.get(DataSource),
        clock,
        app.app.get(PeriodicJobs),
        loadConfig({ DATABASE_URL: db.url, ...over }),
      );
    expect(pruner({}).prunes).toBe(true);
    expect(pruner({ ROLE: 'manager' }).prunes).toBe(true);
    expect(pruner({ ROLE: 'api' }).prunes).toBe(false);
    expect(pruner({ ROLE: 'manager', NOTIFY_URL: BROKER }).prunes).toBe(false);
    expect(
      pruner({ ROLE: 'manager', WEBHOOK_URLS: 'http://127.0.0.1:9/h', WEBHOOK_SECRET: SECRET })
        .prunes,
    ).toBe(false);
  });
});
