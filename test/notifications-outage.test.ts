import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { Metrics } from '../src/observability/metrics.js';
import { PeriodicJobs } from '../src/observability/periodic-jobs.js';
import { startApp, TestApp } from './support/app.js';
import { BROKER, consumeNotifications } from './support/rabbit.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { createLeases, sleep, waitFor } from './support/seed.js';

jest.setTimeout(60_000);

interface Message {
  message_id: string;
  event_type: string;
  payload: { id: string };
}

describe('notifications when the broker or a publisher fails', () => {
  const topic = `climate-test-${randomUUID()}`;
  const proxy = new TcpProxy('127.0.0.1', 5672);
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let publisher: NotificationPublisher;
  let consumer: ChannelModel;
  const received: Message[] = [];

  beforeAll(async () => {
    await proxy.listen();
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { NOTIFY_URL: `amqp://guest:guest@127.0.0.1:${proxy.port}`, NOTIFY_TOPICS: topic },
    });
    client = await connect(db.url);
    publisher = t.app.get(NotificationPublisher);
    consumer = await consumeNotifications(topic, (msg) => {
      const body = JSON.parse(msg.content.toString()) as { 'oslo.message': string };
      received.push(JSON.parse(body['oslo.message']) as Message);
    });
  });
  afterAll(async () => {
    await consumer?.close();
    await client?.end();
    await t?.close();
    await proxy.cut();
    await db?.drop();
  });

  async function outboxIds(): Promise<string[]> {
    const { rows } = await client.query(`SELECT message_id FROM notification_outbox`);
    return rows.map((r: { message_id: string }) => r.message_id);
  }

  /** Pumps until the outbox is empty (the publisher may be backing off from a failure). */
  async function pumpUntilEmpty(p: NotificationPublisher): Promise<void> {
    await waitFor('an empty outbox', async () => {
      await p.pump().catch(() => undefined);
      return (await outboxIds()).length === 0 ? true : undefined;
    });
  }

  function uniqueIds(from: number): Set<string> {
    return new Set(received.slice(from).map((m) => m.message_id));
  }

  it('should lose none of a burst of 500 changes when the broker goes away and comes back', async () => {
    const start = received.length;
    const warn = jest.spyOn(Logger.prototype, 'warn');
    let done = false;
    const burst = createLeases([t], 500, (i) => ({
      name: `burst-${i}`,
      start: '2030-06-01 00:00',
      end: '2030-06-01 01:00',
    })).finally(() => {
      done = true;
    });
    // Publishing runs alongside the burst; the broker is away for its middle part.
    let failures = 0;
    let phase: 'before' | 'away' | 'back' = 'before';
    while (!done) {
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM leases`);
      const made = rows[0].n as number;
      if (phase === 'before' && made >= 150) {
        await proxy.cut();
        phase = 'away';
      } else if (phase === 'away' && made >= 350) {
        await proxy.listen();
        phase = 'back';
      }
      await publisher.pump().catch(() => failures++);
      await sleep(20);
    }
    const created = await burst;
    expect(phase).toBe('back');
    expect(failures).toBeGreaterThan(1);
    // One line per kind of failure in the outage (the reset, then the refused connects),
    // however many attempts failed.
    const outageLines = warn.mock.calls
      .map((c) => c[0] as { msg?: string; problem?: string })
      .filter((line) => String(line.msg).startsWith('notifications not published'));
    expect(outageLines.length).toBeGreaterThanOrEqual(1);
    expect(outageLines.length).toBeLessThan(failures);
    expect(new Set(outageLines.map((l) => l.problem)).size).toBe(outageLines.length);
    warn.mockRestore();
    await pumpUntilEmpty(publisher);
    await waitFor('every notification', () => (uniqueIds(start).size >= 500 ? true : undefined));
    const creates = received.slice(start).filter((m) => m.event_type === 'lease.create');
    expect(new Set(creates.map((m) => m.payload.id))).toEqual(new Set(created.map((c) => c.id)));
    expect(uniqueIds(start).size).toBe(500);
    expect(await outboxIds()).toEqual([]);
  });

  it('should send a batch through another publisher, repeats keeping their message_id, when the first dies mid-batch', async () => {
    const start = received.length;
    await createLeases([t], 50, (i) => ({
      name: `batch-${i}`,
      start: '2030-07-01 00:00',
      end: '2030-07-01 01:00',
    }));
    const pending = await outboxIds();
    expect(pending).toHaveLength(50);
    // The app's publisher sends its batch but never hears the confirms: it hangs holding
    // the rows, and a second publisher (another manager) can take none of them.
    proxy.mode = 'mute';
    const dying = publisher.pump();
    dying.catch(() => undefined);
    await waitFor('the broker to get the batch', () =>
      uniqueIds(start).size === 50 ? true : undefined,
    );
    const jobs = t.app.get(PeriodicJobs);
    const other = new NotificationPublisher(t.app.get(DataSource), new Metrics(), jobs, {
      ...t.config,
      notify: { ...t.config.notify, url: BROKER },
    });
    try {
      expect(await other.pump()).toBe(0);
      // The first publisher dies before deleting its rows: they are still there.
      await proxy.cut();
      await expect(dying).rejects.toThrow();
      proxy.mode = 'forward';
      await proxy.listen();
      expect((await outboxIds()).sort()).toEqual([...pending].sort());
      expect(await other.pump()).toBe(50);
    } finally {
      await other.disconnect();
    }
    await waitFor('the repeats', () => (received.length - start >= 100 ? true : undefined));
    const ids = received.slice(start).map((m) => m.message_id);
    expect(new Set(ids)).toEqual(new Set(pending));
    expect(ids).toHaveLength(100);
    expect(await outboxIds()).toEqual([]);
  });
});
