import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, names } from './support/hosts.js';

describe('concurrent host reservations', () => {
  let db: TestDatabase;
  let apps: TestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const first = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
    // Three API replicas, each with its own connection pool, on one database.
    apps = [
      first,
      await startApp({
        databaseUrl: db.url,
        env: { PLUGINS: 'physical:host' },
        clock: first.clock,
      }),
      await startApp({
        databaseUrl: db.url,
        env: { PLUGINS: 'physical:host' },
        clock: first.clock,
      }),
    ];
    first.clock.set(new Date('2032-01-01T00:00:00Z'));
    await addHosts(first.http, names('cc', 20));
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });

  it('should give exactly as many leases as there are hosts when 50 creates race for one window', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        apps[i % apps.length].http.post('/v1/leases').send({
          name: `race-${i}`,
          start_date: '2032-01-02 00:00',
          end_date: '2032-01-03 00:00',
          reservations: [hostReservation()],
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(20);
    expect(statuses.filter((s) => s === 409)).toHaveLength(30);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.body.error_type).toBe('NotEnoughHostsAvailable');
    }

    const client = await connect(db.url);
    try {
      const overlaps = await client.query(
        `SELECT count(*) FROM host_allocations a JOIN host_allocations b
           ON a.host_id = b.host_id AND a.id < b.id AND a.during && b.during`,
      );
      expect(Number(overlaps.rows[0].count)).toBe(0);
      const used = await client.query(
        `SELECT count(DISTINCT host_id) AS hosts, count(*) AS rows FROM host_allocations`,
      );
      expect(Number(used.rows[0].hosts)).toBe(20);
      expect(Number(used.rows[0].rows)).toBe(20);
      // refused creates left nothing behind
      expect(Number((await client.query('SELECT count(*) FROM leases')).rows[0].count)).toBe(20);
    } finally {
      await client.end();
    }
  });

  it('should let concurrent creates for different windows all succeed on one host', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        apps[i % apps.length].http.post('/v1/leases').send({
          name: `slot-${i}`,
          start_date: `2032-02-${String(i + 1).padStart(2, '0')} 00:00`,
          end_date: `2032-02-${String(i + 1).padStart(2, '0')} 12:00`,
          reservations: [
            hostReservation({ hypervisor_properties: '["==", "$hypervisor_hostname", "cc-001"]' }),
          ],
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(201));
  });
});
