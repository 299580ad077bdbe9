import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { seed } from '../bench/seed.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { hostReservation } from './support/hosts.js';
import { rowsRead, statsFlushed } from './support/rows-read.js';

jest.setTimeout(180_000);

const START = new Date('2035-01-01T00:00:00Z');

const sample = (text: string, line: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${line} `))
      ?.split(' ')[1] ?? NaN,
  );

interface Fleet {
  db: TestDatabase;
  t: TestApp;
  client: Client;
}

async function fleet(hosts: number): Promise<Fleet> {
  const db = await createTestDatabase();
  const t = await startApp({
    databaseUrl: db.url,
    clock: undefined,
    env: { PLUGINS: 'physical:host' },
  });
  t.clock.set(START);
  await seed(t.app.get(DataSource), hosts, 2, START);
  return { db, t, client: await connect(db.url) };
}

/** What three scrapes read, once the app's backends have flushed their statistics. */
async function scrapeCost(f: Fleet): Promise<number> {
  await f.t.http.get('/metrics').expect(200);
  await statsFlushed();
  const before = await rowsRead(f.client);
  for (let i = 0; i < 3; i++) await f.t.http.get('/metrics').expect(200);
  await statsFlushed();
  return (await rowsRead(f.client)) - before;
}

describe('/metrics at scale', () => {
  let small: Fleet;
  let large: Fleet;

  beforeAll(async () => {
    [small, large] = await Promise.all([fleet(100), fleet(10_000)]);
  });
  afterAll(async () => {
    for (const f of [small, large]) {
      await f?.client.end();
      await f?.t.close();
      await f?.db.drop();
    }
  });

  it('should read no more rows per scrape at 10,000 hosts than at 100', async () => {
    const [few, many] = await Promise.all([scrapeCost(small), scrapeCost(large)]);
    // The same small count tables either way (a scan of hosts would read 10,000 more).
    expect(many).toBeLessThanOrEqual(few + 100);
  });

  it('should report the same counts as the tables hold after hosts move and leases change', async () => {
    const { t, client } = large;
    const made = await t.http
      .post('/v1/leases')
      .send({
        name: 'moves',
        start_date: '2035-01-01 00:30',
        end_date: '2035-01-01 02:00',
        reservations: [hostReservation({ min: 3, max: 3 })],
      })
      .expect(201);
    t.clock.set(new Date('2035-01-01T00:31:00Z'));
    await t.settle();
    const lease = await t.http.get(`/v1/leases/${made.body.lease.id}`).expect(200);
    expect(lease.body.lease.status).toBe('ACTIVE');
    await client.query(`UPDATE hosts SET reservable = false WHERE id IN (1, 2, 3, 500)`);
    await client.query(
      `DELETE FROM hosts WHERE id = 9999 AND NOT EXISTS (SELECT 1 FROM host_allocations WHERE host_id = 9999)`,
    );
    await client.query(`UPDATE leases SET degraded = true WHERE id = $1`, [made.body.lease.id]);
    const text = (await t.http.get('/metrics').expect(200)).text;
    const pools = await client.query<{ pool: string; reservable: boolean; n: number }>(
      `SELECT coalesce(p.kind, 'none') AS pool, h.reservable, count(*)::int AS n
         FROM hosts h LEFT JOIN aggregate_hosts p ON p.host_id = h.id
          AND p.kind IN ('freepool', 'shared', 'recycle', 'reservation')
        GROUP BY 1, 2`,
    );
    expect(pools.rows.some((r) => r.pool === 'reservation')).toBe(true);
    for (const pool of ['freepool', 'shared', 'recycle', 'reservation', 'none']) {
      for (const reservable of [true, false]) {
        const want = pools.rows.find((r) => r.pool === pool && r.reservable === reservable)?.n ?? 0;
        expect([
          pool,
          reservable,
          sample(text, `climate_pool_hosts{pool="${pool}",reservable="${reservable}"}`),
        ]).toEqual([pool, reservable, want]);
      }
    }
    const leases = await client.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM leases GROUP BY 1`,
    );
    for (const row of leases.rows) {
      expect([row.status, sample(text, `climate_leases{status="${row.status}"}`)]).toEqual([
        row.status,
        row.n,
      ]);
    }
    expect(sample(text, 'climate_leases_degraded')).toBe(1);
  });
});
