import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { seed } from '../bench/seed.js';
import { PowerService } from '../src/power/power.service.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { hostReservation } from './support/hosts.js';
import { rowsRead, statsFlushed } from './support/rows-read.js';

jest.setTimeout(300_000);

const START = new Date('2035-01-01T00:00:00Z');

interface Fleet {
  db: TestDatabase;
  t: TestApp;
  client: Client;
  /** Rows read by each phase, in order. */
  reads: number[];
}

/**
 * A fleet under the power plan as it is once the plan has run a while: every host the
 * plan wants off is off (set in the database, logged), and the plan has seen it.
 */
async function fleet(hosts: number): Promise<Fleet> {
  const db = await createTestDatabase();
  const t = await startApp({
    databaseUrl: db.url,
    env: { PLUGINS: 'physical:host', POWER_PLAN: 'on' },
  });
  t.clock.set(START);
  await seed(t.app.get(DataSource), hosts, 10, START, undefined, 'blazar');
  const client = await connect(db.url);
  const power = t.app.get(PowerService);
  await power.run();
  t.clock.advance(2 * 3_600_000);
  await power.run();
  await client.query(
    `WITH off AS (
       UPDATE host_power hp SET state = 'off', changed_at = $1 FROM power_plan pp
        WHERE pp.host_id = hp.host_id AND pp.act = 'off' RETURNING hp.host_id)
     INSERT INTO power_log (host_id, state, at) SELECT host_id, 'off', $1 FROM off`,
    // Off an hour ago.
    [new Date(t.clock.now().getTime() - 3_600_000)],
  );
  await power.run();
  // Every host just computed has a window from now: the next run's sums pass them, once.
  t.clock.advance(15_000);
  await power.run();
  return { db, t, client, reads: [] };
}

/** Runs each phase three times, recording the rows it read. */
async function phases(f: Fleet, list: (() => Promise<unknown>)[]): Promise<void> {
  await statsFlushed();
  let before = await rowsRead(f.client);
  for (const phase of list) {
    for (let i = 0; i < 3; i++) await phase();
    await statsFlushed();
    const after = await rowsRead(f.client);
    f.reads.push(after - before);
    before = after;
  }
}

describe('the power plan and /readyz at scale', () => {
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

  it('should read about as many rows at 10,000 hosts as at 100', async () => {
    const list = (f: Fleet) => {
      const power = f.t.app.get(PowerService);
      let lease = 0;
      return [
        () => f.t.http.get('/readyz').expect(200),
        () => f.t.http.get('/v1/power-plan').expect(200),
        async () => {
          f.t.clock.advance(15_000);
          await power.run();
        },
        // Creates (the host pick is the physical-host plugin's: not counted here).
        () => {
          const start = new Date(f.t.clock.now().getTime() + (3 + lease++) * 86_400_000);
          return f.t.http
            .post('/v1/leases')
            .send({
              name: 'one',
              start_date: start.toISOString(),
              end_date: new Date(start.getTime() + 3_600_000).toISOString(),
              reservations: [hostReservation()],
            })
            .expect(201);
        },
        async () => {
          f.t.clock.advance(15_000);
          await power.run();
        },
      ];
    };
    await Promise.all([phases(small, list(small)), phases(large, list(large))]);
    const off = await large.client.query(
      `SELECT count(*)::int AS n FROM host_power WHERE state = 'off'`,
    );
    expect(off.rows[0].n).toBeGreaterThan(5000);
    // Whatever scans hosts, allocations or the plan would read 10,000 rows more at least.
    const names = ['/readyz', 'GET /v1/power-plan', 'power run', 'creates', 'power runs after'];
    const slack = [0, 1000, 1000, Infinity, 1000];
    const seen = names.map((name, i) => [name, small.reads[i], large.reads[i]]);
    expect(seen.filter(([, few, many], i) => Number(many) > Number(few) + slack[i])).toEqual([]);
    // /readyz reads no table at all.
    expect([small.reads[0], large.reads[0]]).toEqual([0, 0]);
  });
});
