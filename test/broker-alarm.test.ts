import { randomUUID } from 'node:crypto';
import type { ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { consumeNotifications } from './support/rabbit.js';
import { PrivateRabbit } from './support/rabbit-admin.js';
import { createLease, sleep, waitFor } from './support/seed.js';

jest.setTimeout(180_000);

/** A memory alarm, on a RabbitMQ node of this test's own (never the shared one). */
describe('a broker memory alarm', () => {
  const rabbit = new PrivateRabbit();
  const topic = `climate-test-${randomUUID()}`;
  let db: TestDatabase;
  let client: Client;
  let t: TestApp;
  let consumer: ChannelModel;
  const received: string[] = [];

  beforeAll(async () => {
    await rabbit.start();
    db = await createTestDatabase();
    client = await connect(db.url);
    t = await startApp({
      databaseUrl: db.url,
      env: { NOTIFY_URL: rabbit.url, NOTIFY_TOPICS: topic },
    });
    consumer = await consumeNotifications(
      topic,
      (msg) => {
        const body = JSON.parse(msg.content.toString()) as { 'oslo.message': string };
        received.push((JSON.parse(body['oslo.message']) as { message_id: string }).message_id);
      },
      'openstack',
      rabbit.url,
    );
  });
  afterAll(async () => {
    await consumer?.close().catch(() => undefined);
    await t?.close();
    await client?.end();
    await db?.drop();
    await rabbit.stop();
  });

  it('should keep serving while blocked and send each notification once when the alarm clears', async () => {
    const publisher = t.app.get(NotificationPublisher);
    await createLease(t, { name: 'a', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    expect(await publisher.pump()).toBe(1);
    await rabbit.ctl('set_vm_memory_high_watermark', '0.000001');
    for (let i = 0; i < 5; i++) {
      await createLease(t, { name: `b-${i}`, start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    }
    const { rows } = await client.query<{ message_id: string }>(
      `SELECT message_id FROM notification_outbox`,
    );
    const pass = publisher.pump();
    pass.catch(() => undefined);
    const text = async () => (await t.http.get('/metrics').expect(200)).text;
    await waitFor(
      'the block to be counted',
      async () => ((await text()).includes('reason="blocked"} 1') ? true : undefined),
      30_000,
    );
    // Still serving while the broker holds the batch.
    await createLease(t, { name: 'during', start: '2030-06-01 00:00', end: '2030-06-01 01:00' });
    await sleep(12_000); // longer than the confirm timeout: the held batch is not given up
    expect(received).toHaveLength(1);
    await rabbit.ctl('set_vm_memory_high_watermark', '0.4');
    await pass;
    await waitFor(
      'the outbox drained',
      async () => {
        await publisher.pump().catch(() => undefined);
        const left = await client.query(`SELECT 1 FROM notification_outbox`);
        return left.rowCount === 0 ? true : undefined;
      },
      60_000,
    );
    await waitFor('all of them', () => (received.length >= 7 ? true : undefined), 30_000);
    await sleep(500);
    expect(received).toHaveLength(7);
    expect(new Set(received).size).toBe(7);
    for (const r of rows) expect(received).toContain(r.message_id);
  });
});
