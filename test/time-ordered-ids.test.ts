import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';

/** The 48-bit millisecond time at the front of a version 7 uuid. */
function timeOf(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}

/** Whether an id is a version 7 uuid made between `from` and `to` (wall-clock ms). */
function madeBetween(id: string, from: number, to: number): boolean {
  return id[14] === '7' && '89ab'.includes(id[19]) && timeOf(id) >= from && timeOf(id) <= to;
}

describe('time-ordered ids', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host,virtual:instance' } });
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await addHosts(t.http, ['h-1', 'h-2', 'h-3'], () => ({ zone: 'z' }));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function idsOf(leaseId: string): Promise<string[]> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query<{ id: string }>(
        `SELECT id FROM leases WHERE id = $1
         UNION ALL SELECT id FROM reservations WHERE lease_id = $1
         UNION ALL SELECT id FROM events WHERE lease_id = $1
         UNION ALL SELECT a.id FROM host_allocations a JOIN reservations r ON r.id = a.reservation_id
                    WHERE r.lease_id = $1
         UNION ALL SELECT a.id FROM instance_allocations a JOIN reservations r ON r.id = a.reservation_id
                    WHERE r.lease_id = $1`,
        [leaseId],
      );
      return rows.map((r) => r.id);
    } finally {
      await client.end();
    }
  }

  it('should give a lease, its reservations, events and allocations ids that carry when they were made', async () => {
    const made: { from: number; to: number; ids: string[] }[] = [];
    for (const name of ['first', 'second']) {
      const from = Date.now();
      const res = await t.http
        .post('/v1/leases')
        .send({
          name,
          start_date: name === 'first' ? '2031-01-02 00:00' : '2031-01-05 00:00',
          end_date: name === 'first' ? '2031-01-03 00:00' : '2031-01-06 00:00',
          reservations: [hostReservation({ min: 2, max: 2 }), slotReservation('z')],
        })
        .expect(201);
      const to = Date.now();
      const ids = await idsOf(res.body.lease.id as string);
      // lease, 2 reservations, 3 events (before-end is on by default), 2 host allocations,
      // 1 slot allocation
      expect(ids).toHaveLength(9);
      for (const id of ids) expect(madeBetween(id, from, to)).toBe(true);
      made.push({ from, to, ids });
      await new Promise((r) => setTimeout(r, 3));
    }
    const [first, second] = made;
    expect(first.ids.every((a) => second.ids.every((b) => a < b))).toBe(true);
  });

  it('should make distinct version 7 ids in SQL, as uuids that sort by the time they were made', async () => {
    const client = await connect(db.url);
    try {
      const from = Date.now();
      const { rows } = await client.query<{ id: string }>(
        `SELECT uuid7()::text AS id FROM generate_series(1, 5000)`,
      );
      const to = Date.now();
      expect(new Set(rows.map((r) => r.id)).size).toBe(5000);
      for (const { id } of rows) expect(madeBetween(id, from, to)).toBe(true);
      const later = await client.query<{ later: boolean }>(
        `SELECT pg_sleep(0.002), uuid7() > $1::uuid AS later`,
        [rows[rows.length - 1].id],
      );
      expect(later.rows[0].later).toBe(true);
    } finally {
      await client.end();
    }
  });
});
