import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { WebhookDispatcher } from '../src/notifications/webhook-dispatcher.js';
import { WebhookStore } from '../src/notifications/webhook-store.js';
import { BROKER, consumeNotifications } from './support/rabbit.js';
import { waitFor } from './support/seed.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

// PGlite takes a few seconds to start.
jest.setTimeout(60_000);

describe('webhooks on the embedded PGlite database', () => {
  const topic = `climate-test-${randomUUID()}`;
  const receiver = new WebhookReceiver();
  let dataDir: string;
  let app: INestApplication | undefined;
  let consumer: ChannelModel;
  const bus: string[] = [];

  beforeAll(async () => {
    await receiver.listen();
    dataDir = mkdtempSync(join(tmpdir(), 'climate-webhooks-'));
    const config = {
      ...loadConfig({
        DATA_DIR: dataDir,
        LOG_LEVEL: 'error',
        NOTIFY_URL: BROKER,
        NOTIFY_TOPICS: topic,
        WEBHOOK_URLS: receiver.url,
        WEBHOOK_SECRET: 'webhook-test-secret-0123456789',
      }),
      managerTimer: false,
    };
    const clock = new FakeClock(new Date('2041-06-01T00:00:00Z'));
    app = await buildApp(config, { clock, plugins: [], logger: false });
    await app.init();
    consumer = await consumeNotifications(topic, (msg) => bus.push(msg.content.toString()));
  });
  afterAll(async () => {
    await consumer?.close();
    await app?.close();
    await receiver.down();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('should deliver to the bus and the receiver and empty the outbox when the database is PGlite', async () => {
    const nest = app as INestApplication;
    const http = request(nest.getHttpServer());
    for (const name of ['one', 'two']) {
      await http
        .post('/v1/leases')
        .send({ name, start_date: '2041-06-01 01:00', end_date: '2041-06-01 02:00' })
        .expect(201);
    }
    const outbox = () =>
      nest.get(DataSource).query(`SELECT published FROM notification_outbox ORDER BY id`);
    expect(await nest.get(NotificationPublisher).pump()).toBe(2);
    expect(await outbox()).toEqual([{ published: true }, { published: true }]);
    expect(await nest.get(WebhookDispatcher).pump()).toBe(2);
    expect(await outbox()).toEqual([]);
    expect(receiver.got.map((d) => [d.message.payload.name, d.status])).toEqual([
      ['one', 204],
      ['two', 204],
    ]);
    expect(await nest.get(WebhookStore).sweep([receiver.url], true)).toBe(0);
    await waitFor('the bus', () => (bus.length === 2 ? true : undefined));
  });
});
