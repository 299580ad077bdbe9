import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { sql } from '../src/database/sql.js';
import { EventRunner } from '../src/events/event-runner.js';
import { LeaseEvent } from '../src/model/lease-event.entity.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';

jest.setTimeout(60_000);

/** The text of every statement (round trip) this process sends while `on`. */
const sent: string[] = [];
let on = false;
const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const original = proto.query;
proto.query = function (this: unknown, ...args: unknown[]) {
  if (on) {
    const q = args[0] as string | { text: string };
    sent.push((typeof q === 'string' ? q : q.text).replace(/\s+/g, ' ').trim());
  }
  return original.apply(this, args);
};

const OWNER = 'round-trips';

describe('lease event round trips', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host,virtual:instance' },
    });
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await addHosts(t.http, ['rt-1', 'rt-2']);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** Claims the lease's event of `type` as a manager would, runs it, returns what it sent. */
  async function run(leaseId: string, type: LeaseEvent['eventType']): Promise<string[]> {
    const ds = t.app.get(DataSource);
    await sql(
      ds.manager,
      `UPDATE events SET status = 'IN_PROGRESS', claimed_by = $3, attempts = attempts + 1,
              claim_expires_at = now() + interval '1 hour'
        WHERE lease_id = $1 AND event_type = $2`,
      [leaseId, type, OWNER],
    );
    const event = await ds.getRepository(LeaseEvent).findOneByOrFail({ leaseId, eventType: type });
    sent.length = 0;
    on = true;
    try {
      await t.app.get(EventRunner).run(event, OWNER);
    } finally {
      on = false;
    }
    const done = await sql<{ status: string }>(
      ds.manager,
      `SELECT status FROM events WHERE lease_id = $1 AND event_type = $2`,
      [leaseId, type],
    );
    expect(done.rows[0].status).toBe('DONE');
    return [...sent];
  }

  /** Statements sent more than once (the lease's lock is taken by begin and by complete). */
  function repeated(statements: string[]): string[] {
    const lock = /^SELECT .* FROM leases WHERE id = \$1 FOR UPDATE$/;
    return statements.filter((s, i) => statements.indexOf(s) !== i && !lock.test(s));
  }

  it('should start a host or instance lease in at most 10 or 12 round trips and end it in 11 or 13, reading nothing twice', async () => {
    for (const [name, reservation] of [
      ['host', hostReservation()],
      ['instance', slotReservation('z', { resource_properties: '' })],
    ] as const) {
      const created = await t.http
        .post('/v1/leases')
        .send({
          name,
          start_date: '2031-01-01 01:00',
          end_date: '2031-01-01 02:00',
          reservations: [reservation],
        })
        .expect(201);
      const id = created.body.lease.id as string;
      t.clock.set(new Date('2031-01-01T01:00:00Z'));
      const start = await run(id, 'start_lease');
      t.clock.set(new Date('2031-01-01T02:00:00Z'));
      const end = await run(id, 'end_lease');
      t.clock.set(new Date('2031-01-01T00:00:00Z'));
      // Before: 24-28 round trips each, the lease, its reservations and events and the
      // hosts' pools read two or three times.
      expect(start.length).toBeLessThanOrEqual(name === 'host' ? 10 : 12);
      expect(end.length).toBeLessThanOrEqual(name === 'host' ? 11 : 13);
      expect(repeated(start)).toEqual([]);
      expect(repeated(end)).toEqual([]);
      const lease = (await t.http.get(`/v1/leases/${id}`).expect(200)).body.lease;
      expect(lease.status).toBe('TERMINATED');
    }
  });
});
