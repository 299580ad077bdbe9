import { createHmac, randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { Lease } from '../src/model/lease.entity.js';
import { LeaseNotifier } from '../src/leases/lease-notifier.js';
import { WebhookDispatcher } from '../src/notifications/webhook-dispatcher.js';
import { WebhookSender } from '../src/notifications/webhook-sender.js';
import { WebhookStore } from '../src/notifications/webhook-store.js';
import { PeriodicJobs } from '../src/observability/periodic-jobs.js';
import { Metrics } from '../src/observability/metrics.js';
import { explainStartupError } from '../src/database/startup-error.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { createLeases, sleep } from './support/seed.js';
import { WebhookReceiver, type Delivery } from './support/webhook-receiver.js';

jest.setTimeout(90_000);

const SECRET = 'webhook-test-secret-0123456789';
const HOUR = 3600_000;

/** What a receiver does with a delivery: check the signature over timestamp and raw body. */
function validSignature(d: Delivery): boolean {
  const ts = String(d.headers['x-climate-timestamp']);
  const want = 'sha256=' + createHmac('sha256', SECRET).update(`${ts}.${d.raw}`).digest('hex');
  return d.headers['x-climate-signature'] === want;
}

/** Per lease, the event types in the order the receiver took them. */
function perLease(deliveries: Delivery[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const d of deliveries) {
    const id = d.message.payload.id;
    out.set(id, [...(out.get(id) ?? []), d.message.event_type]);
  }
  return out;
}

function ids(deliveries: Delivery[]): string[] {
  return deliveries.map((d) => d.message.message_id);
}

async function counter(metrics: Metrics, result: string): Promise<number> {
  const { values } = await metrics.webhookDeliveries.get();
  return values.find((v) => v.labels.result === result)?.value ?? 0;
}

describe('webhooks', () => {
  const a = new WebhookReceiver();
  const b = new WebhookReceiver();
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let dispatcher: WebhookDispatcher;
  let metrics: Metrics;

  beforeAll(async () => {
    await a.listen();
    await b.listen();
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        WEBHOOK_URLS: `${a.url},${b.url}`,
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_TIMEOUT_SECONDS: '1',
      },
    });
    client = await connect(db.url);
    dispatcher = t.app.get(WebhookDispatcher);
    metrics = t.app.get(Metrics);
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await a.down();
    await b.down();
    await db?.drop();
  });

  async function outboxSize(): Promise<number> {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM notification_outbox`);
    return rows[0].n as number;
  }

  /** Passes until both receivers are caught up, moving the clock past any retry wait. */
  async function deliverAll(): Promise<void> {
    for (let i = 0; i < 50; i++) {
      await dispatcher.pump();
      if ((await outboxSize()) === 0) return;
      t.clock.advance(61_000);
    }
    throw new Error(`the outbox still holds ${await outboxSize()} rows`);
  }

  async function show(id: string): Promise<Record<string, unknown>> {
    return (await t.http.get(`/v1/leases/${id}`).expect(200)).body.lease;
  }

  it('should deliver each change and event once to each receiver, signed, when a lease lives its life', async () => {
    const [fromA, fromB] = [a.got.length, b.got.length];
    t.clock.set(new Date('2030-01-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'hooked',
        start_date: '2030-01-01 01:00',
        end_date: '2030-01-01 03:00',
        reservations: [{ resource_type: t.recorder.resourceType }],
      })
      .expect(201);
    const id = created.body.lease.id as string;
    await dispatcher.pump();
    const [create] = a.got.slice(fromA);
    expect(a.got.slice(fromA)).toHaveLength(1);
    expect(create.message).toEqual({
      message_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      publisher_id: 'climate.lease',
      event_type: 'lease.create',
      priority: 'INFO',
      payload: { ...created.body.lease, lease_id: id },
      timestamp: '2030-01-01 00:00:00.000000',
    });
    expect(create.headers).toMatchObject({
      'content-type': 'application/json',
      'x-climate-event': 'lease.create',
      'x-climate-message-id': create.message.message_id,
      'x-climate-timestamp': String(Date.parse('2030-01-01T00:00:00Z') / 1000),
    });
    expect(validSignature(create)).toBe(true);
    // A body changed on the way no longer matches its signature.
    expect(validSignature({ ...create, raw: create.raw.replace('hooked', 'hacked') })).toBe(false);

    t.clock.advance(60_000);
    await t.http.put(`/v1/leases/${id}`).send({ name: 'renamed' }).expect(200);
    await dispatcher.pump();
    expect(a.got.at(-1)?.message.payload).toEqual({ ...(await show(id)), lease_id: id });
    for (const advance of [HOUR, HOUR, HOUR]) {
      t.clock.advance(advance);
      await t.settle();
      await dispatcher.pump();
    }
    await t.http.delete(`/v1/leases/${id}`).expect(204);
    await deliverAll();

    for (const [receiver, from] of [
      [a, fromA],
      [b, fromB],
    ] as const) {
      const got = receiver.got.slice(from);
      expect(got.map((d) => d.message.event_type)).toEqual([
        'lease.create',
        'lease.update',
        'lease.event.start_lease',
        'lease.event.before_end_lease',
        'lease.event.end_lease',
        'lease.delete',
      ]);
      expect(got.every(validSignature)).toBe(true);
      expect(new Set(ids(got)).size).toBe(6);
      expect(got.map((d) => d.headers['x-climate-message-id'])).toEqual(ids(got));
    }
    // Both receivers had the very same messages.
    expect(ids(b.got.slice(fromB))).toEqual(ids(a.got.slice(fromA)));
    expect(await outboxSize()).toBe(0);
  });

  it('should deliver nothing for a change that was refused or rolled back', async () => {
    const [fromA, fromB] = [a.got.length, b.got.length];
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await t.http
      .post('/v1/leases')
      .send({ name: 'backwards', start_date: '2031-01-01 05:00', end_date: '2031-01-01 04:00' })
      .expect(400);
    const ok = await t.http
      .post('/v1/leases')
      .send({ name: 'kept', start_date: '2031-01-01 05:00', end_date: '2031-01-01 06:00' })
      .expect(201);
    await t.http
      .put(`/v1/leases/${ok.body.lease.id}`)
      .send({ end_date: '2031-01-01 07:00', reservations: [{ id: randomUUID() }] })
      .expect(400);
    // A notification written in a transaction that then rolls back.
    const outbox = t.app.get(LeaseNotifier);
    await expect(
      t.app.get(DataSource).transaction(async (tx) => {
        const lease = await tx.findOneByOrFail(Lease, { id: ok.body.lease.id as string });
        await outbox.add(tx, 'lease.update', { lease, reservations: [], events: [] });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await deliverAll();
    for (const got of [a.got.slice(fromA), b.got.slice(fromB)]) {
      expect(got.map((d) => [d.message.event_type, d.message.payload.name])).toEqual([
        ['lease.create', 'kept'],
      ]);
    }
  });

  it('should retry a delivery answered 500 after a wait, holding back only that lease', async () => {
    const fromA = a.got.length;
    const refusedBefore = await counter(metrics, 'refused');
    t.clock.set(new Date('2032-01-01T00:00:00Z'));
    const spec = (name: string) => ({
      name,
      start_date: '2032-01-01 05:00',
      end_date: '2032-01-01 06:00',
    });
    const first = (await t.http.post('/v1/leases').send(spec('first')).expect(201)).body.lease;
    await t.http.put(`/v1/leases/${first.id}`).send({ name: 'first-2' }).expect(200);
    const second = (await t.http.post('/v1/leases').send(spec('second')).expect(201)).body.lease;
    a.refuseOnce((m) => m.payload.id === first.id);

    await dispatcher.pump();
    // The other lease went through; the refused lease's update waits for its create.
    expect(a.got.slice(fromA).map((d) => [d.message.payload.name, d.status])).toEqual([
      ['first', 500],
      ['second', 204],
    ]);
    expect(await counter(metrics, 'refused')).toBe(refusedBefore + 1);
    const { rows } = await client.query(
      `SELECT failures, last_error, retry_at FROM webhook_receivers WHERE url = $1`,
      [a.url],
    );
    expect(rows[0]).toMatchObject({
      failures: 1,
      last_error: expect.stringContaining('answered 500 (lease.create'),
      retry_at: new Date(t.clock.now().getTime() + 1000),
    });
    // Not before the wait is over.
    await dispatcher.pump();
    expect(a.got.length).toBe(fromA + 2);

    t.clock.advance(1000);
    await dispatcher.pump();
    const got = a.got.slice(fromA);
    expect(got.map((d) => [d.message.payload.name, d.status])).toEqual([
      ['first', 500],
      ['second', 204],
      ['first', 204],
      ['first-2', 204],
    ]);
    // The repeat is the same message.
    expect(got[2].raw).toBe(got[0].raw);
    expect(perLease(a.taken.slice(-3)).get(second.id as string)).toEqual(['lease.create']);
    const after = await client.query(
      `SELECT failures, last_error, retry_at FROM webhook_receivers WHERE url = $1`,
      [a.url],
    );
    expect(after.rows[0]).toEqual({ failures: 0, last_error: null, retry_at: null });
    await deliverAll();
  });

  it('should retry a delivery that got no answer in time, with the same message_id', async () => {
    const fromA = a.got.length;
    const timeoutsBefore = await counter(metrics, 'timeout');
    const warn = jest.spyOn(Logger.prototype, 'warn');
    t.clock.set(new Date('2033-01-01T00:00:00Z'));
    await t.http
      .post('/v1/leases')
      .send({ name: 'slow', start_date: '2033-01-01 05:00', end_date: '2033-01-01 06:00' })
      .expect(201);
    a.hang();
    const started = Date.now();
    await dispatcher.pump();
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(await counter(metrics, 'timeout')).toBe(timeoutsBefore + 1);
    expect(a.got.slice(fromA).map((d) => d.status)).toEqual([null]);
    const lines = warn.mock.calls.filter((c) =>
      String((c[0] as { msg?: string }).msg).startsWith('webhook deliveries failing'),
    );
    warn.mockRestore();
    // Named by its origin only: the path and query may carry a token.
    expect(lines).toEqual([
      [
        expect.objectContaining({
          receiver: `http://127.0.0.1:${a.port}`,
          error: expect.stringContaining('no answer within 1000 ms'),
        }),
      ],
    ]);
    t.clock.advance(1000);
    await dispatcher.pump();
    const got = a.got.slice(fromA);
    expect(got.map((d) => d.status)).toEqual([null, 204]);
    expect(got[1].message.message_id).toBe(got[0].message.message_id);
    expect(got[1].headers['x-climate-delivery-id']).toBe(got[0].headers['x-climate-delivery-id']);
    expect(validSignature(got[1])).toBe(true);
    await deliverAll();
  });

  it('should keep delivering to one receiver while the other is dead, and catch the dead one up in order', async () => {
    const [fromA, fromB] = [a.got.length, b.got.length];
    t.clock.set(new Date('2034-01-01T00:00:00Z'));
    await b.down();
    const leases = await createLeases([t], 20, (i) => ({
      name: `dead-${i}`,
      start: '2034-06-01 00:00',
      end: '2034-06-01 01:00',
    }));
    for (const lease of leases.slice(0, 10)) {
      await t.http.put(`/v1/leases/${lease.id}`).send({ name: 'again' }).expect(200);
    }
    for (let i = 0; i < 5; i++) {
      await dispatcher.pump();
      t.clock.advance(61_000);
    }
    expect(a.got.slice(fromA)).toHaveLength(30);
    expect(b.got.length).toBe(fromB);
    expect(await counter(metrics, 'unreachable')).toBeGreaterThanOrEqual(5);
    // Kept for the dead receiver only, which the backlog shows.
    expect(await outboxSize()).toBe(30);
    expect((await metrics.webhookBacklog.get()).values[0].value).toBe(30);

    await b.listen();
    await deliverAll();
    for (const got of [a.got.slice(fromA), b.got.slice(fromB)]) {
      expect(got).toHaveLength(30);
      const order = perLease(got);
      for (const [i, lease] of leases.entries()) {
        expect(order.get(lease.id)).toEqual(
          i < 10 ? ['lease.create', 'lease.update'] : ['lease.create'],
        );
      }
    }
    expect((await metrics.webhookBacklog.get()).values[0].value).toBe(0);
  });

  it('should lose none of a burst of 200 changes when a receiver goes away and comes back', async () => {
    const [fromA, fromB] = [a.got.length, b.got.length];
    t.clock.set(new Date('2035-01-01T00:00:00Z'));
    let done = false;
    const burst = createLeases([t], 200, (i) => ({
      name: `burst-${i}`,
      start: '2035-06-01 00:00',
      end: '2035-06-01 01:00',
    })).finally(() => {
      done = true;
    });
    let phase: 'before' | 'away' | 'back' = 'before';
    while (!done) {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM leases WHERE name LIKE 'burst-%'`,
      );
      const made = rows[0].n as number;
      if (phase === 'before' && made >= 50) {
        await a.down();
        phase = 'away';
      } else if (phase === 'away' && made >= 150) {
        await a.listen();
        phase = 'back';
      }
      await dispatcher.pump();
      t.clock.advance(61_000);
      await sleep(10);
    }
    const created = await burst;
    expect(phase).toBe('back');
    await deliverAll();
    for (const got of [a.got.slice(fromA), b.got.slice(fromB)]) {
      // Refused connections never reached the receiver: no repeats to allow for.
      expect(got).toHaveLength(200);
      expect(new Set(ids(got)).size).toBe(200);
      expect(new Set(got.map((d) => d.message.payload.id))).toEqual(
        new Set(created.map((c) => c.id)),
      );
      expect(got.every((d) => d.status === 204 && validSignature(d))).toBe(true);
    }
  });

  it('should let one manager at a time send to a receiver when two run passes at once', async () => {
    const fromA = a.got.length;
    t.clock.set(new Date('2036-01-01T00:00:00Z'));
    const leases = await createLeases([t], 40, (i) => ({
      name: `race-${i}`,
      start: '2036-06-01 00:00',
      end: '2036-06-01 01:00',
    }));
    const other = new WebhookDispatcher(
      t.app.get(WebhookStore),
      new WebhookSender(),
      t.app.get(DataSource),
      t.clock,
      new Metrics(),
      t.config,
      t.app.get(PeriodicJobs),
    );
    for (let round = 0; round < 20 && (await outboxSize()) > 0; round++) {
      await Promise.all([dispatcher.pump(), other.pump(), dispatcher.pump(), other.pump()]);
    }
    const got = a.got.slice(fromA);
    expect(got).toHaveLength(40);
    expect(new Set(got.map((d) => d.message.payload.id))).toEqual(new Set(leases.map((l) => l.id)));
    expect(await outboxSize()).toBe(0);
  });

  it('should refuse to start with a clear message when WEBHOOK_URLS has no WEBHOOK_SECRET', () => {
    let error: unknown;
    try {
      loadConfig({ WEBHOOK_URLS: 'https://billing.example/hooks' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(explainStartupError(error, null)).toBe(
      'Invalid configuration; fix these environment variables and start again:\n' +
        '  - WEBHOOK_SECRET: required when WEBHOOK_URLS is set (receivers check the ' +
        'signature of each delivery with it)',
    );
  });
});
