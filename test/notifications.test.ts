import { randomUUID } from 'node:crypto';
import type { ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { startApp, TestApp } from './support/app.js';
import { BROKER, consumeNotifications } from './support/rabbit.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { sleep, waitFor } from './support/seed.js';

const HOUR = 3600_000;

interface Received {
  routingKey: string;
  contentType: string | undefined;
  deliveryMode: number | undefined;
  body: Record<string, unknown>;
  message: {
    message_id: string;
    publisher_id: string;
    event_type: string;
    priority: string;
    payload: Record<string, unknown> & { id: string; status: string; name: string };
    timestamp: string;
  };
}

describe('notifications on RabbitMQ', () => {
  // A topic of this file's own: other runs on the same broker never reach this queue.
  const topic = `climate-test-${randomUUID()}`;
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let publisher: NotificationPublisher;
  let consumer: ChannelModel;
  const received: Received[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { NOTIFY_URL: BROKER, NOTIFY_TOPICS: topic },
    });
    client = await connect(db.url);
    publisher = t.app.get(NotificationPublisher);
    consumer = await consumeNotifications(topic, (msg) => {
      const body = JSON.parse(msg.content.toString()) as Record<string, unknown>;
      received.push({
        routingKey: msg.fields.routingKey,
        contentType: msg.properties.contentType as string | undefined,
        deliveryMode: msg.properties.deliveryMode as number | undefined,
        body,
        message: JSON.parse(body['oslo.message'] as string) as Received['message'],
      });
    });
  });
  afterAll(async () => {
    await consumer?.close();
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  /** Publishes the outbox, then waits for `count` more messages (and checks none extra). */
  async function publishAndReceive(count: number): Promise<Received[]> {
    const before = received.length;
    await publisher.pump();
    await waitFor('the notifications', () =>
      received.length >= before + count ? true : undefined,
    );
    await sleep(100);
    expect(received.length).toBe(before + count);
    return received.slice(before);
  }

  async function outboxSize(): Promise<number> {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM notification_outbox`);
    return rows[0].n as number;
  }

  async function show(id: string): Promise<Record<string, unknown>> {
    return (await t.http.get(`/v1/leases/${id}`).expect(200)).body.lease;
  }

  it('should send each lease change and event once, in oslo envelopes, when the lease lives its life', async () => {
    t.clock.set(new Date('2030-01-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'noisy',
        start_date: '2030-01-01 01:00',
        end_date: '2030-01-01 03:00',
        reservations: [{ resource_type: t.recorder.resourceType }],
      })
      .expect(201);
    const id = created.body.lease.id as string;

    const [create] = await publishAndReceive(1);
    expect(create.routingKey).toBe(`${topic}.info`);
    expect(create.contentType).toBe('application/json');
    expect(create.deliveryMode).toBe(2);
    expect(Object.keys(create.body).sort()).toEqual(['oslo.message', 'oslo.version']);
    expect(create.body['oslo.version']).toBe('2.0');
    expect(create.message).toEqual({
      message_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      publisher_id: 'climate.lease',
      event_type: 'lease.create',
      priority: 'INFO',
      payload: { ...created.body.lease, lease_id: id },
      timestamp: '2030-01-01 00:00:00.000000',
    });

    t.clock.advance(60_000);
    await t.http.put(`/v1/leases/${id}`).send({ name: 'renamed' }).expect(200);
    const [update] = await publishAndReceive(1);
    expect(update.message.event_type).toBe('lease.update');
    expect(update.message.payload).toEqual({ ...(await show(id)), lease_id: id });
    expect(update.message.timestamp).toBe('2030-01-01 00:01:00.000000');

    const steps: [number, string, string][] = [
      [HOUR, 'lease.event.start_lease', 'ACTIVE'],
      [HOUR, 'lease.event.before_end_lease', 'ACTIVE'],
      [HOUR, 'lease.event.end_lease', 'TERMINATED'],
    ];
    for (const [advance, type, status] of steps) {
      t.clock.advance(advance);
      await t.settle();
      const [event] = await publishAndReceive(1);
      expect(event.message.event_type).toBe(type);
      expect(event.message.payload).toMatchObject({ id, name: 'renamed', status });
      const done = (event.message.payload.events as { event_type: string; status: string }[])
        .filter((e) => `lease.event.${e.event_type}` === type)
        .map((e) => e.status);
      expect(done).toEqual(['DONE']);
    }
    expect(await show(id)).toMatchObject({ status: 'TERMINATED' });

    await t.http.delete(`/v1/leases/${id}`).expect(204);
    const [deleted] = await publishAndReceive(1);
    expect(deleted.message.event_type).toBe('lease.delete');
    expect(deleted.message.payload).toMatchObject({ id, lease_id: id, name: 'renamed' });

    const ids = received.map((r) => r.message.message_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(await outboxSize()).toBe(0);
  });

  it('should send before_end_lease.stop when an update moves a done before-end into the future', async () => {
    t.clock.set(new Date('2032-01-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'extended',
        start_date: '2032-01-01 01:00',
        end_date: '2032-01-01 03:00',
        reservations: [{ resource_type: t.recorder.resourceType }],
      })
      .expect(201);
    const id = created.body.lease.id as string;
    await publishAndReceive(1);
    t.clock.advance(2.5 * HOUR);
    await t.settle();
    await publishAndReceive(2); // start_lease, before_end_lease

    // A name change leaves the done before-end alone: lease.update only.
    await t.http.put(`/v1/leases/${id}`).send({ name: 'extended-1' }).expect(200);
    expect((await publishAndReceive(1)).map((m) => m.message.event_type)).toEqual(['lease.update']);
    await t.http.put(`/v1/leases/${id}`).send({ end_date: '2032-01-01 06:00' }).expect(200);
    const [stop, update] = await publishAndReceive(2);
    expect([stop.message.event_type, update.message.event_type]).toEqual([
      'lease.event.before_end_lease.stop',
      'lease.update',
    ]);
    expect(stop.message.payload).toEqual({ ...(await show(id)), lease_id: id });
    const beforeEnd = (stop.message.payload.events as { event_type: string; status: string }[])
      .filter((e) => e.event_type === 'before_end_lease')
      .map((e) => e.status);
    expect(beforeEnd).toEqual(['UNDONE']);

    t.clock.advance(4 * HOUR);
    await t.settle();
    expect((await publishAndReceive(2)).map((m) => m.message.event_type)).toEqual([
      'lease.event.before_end_lease',
      'lease.event.end_lease',
    ]);
  });

  it('should send nothing when a create or an update is refused and rolled back', async () => {
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await t.http
      .post('/v1/leases')
      .send({ name: 'backwards', start_date: '2031-01-01 05:00', end_date: '2031-01-01 04:00' })
      .expect(400);
    const ok = await t.http
      .post('/v1/leases')
      .send({ name: 'fine', start_date: '2031-01-01 05:00', end_date: '2031-01-01 06:00' })
      .expect(201);
    await publishAndReceive(1);
    // Refused inside the update's transaction (an unknown reservation id).
    await t.http
      .put(`/v1/leases/${ok.body.lease.id}`)
      .send({ end_date: '2031-01-01 07:00', reservations: [{ id: randomUUID() }] })
      .expect(400);
    expect(await outboxSize()).toBe(0);
    await publishAndReceive(0);
  });
});
