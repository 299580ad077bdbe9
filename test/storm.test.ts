import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { BUILTIN_RESOURCE_TYPES, loadConfig } from '../src/config/config.js';
import { ManagerService } from '../src/events/manager.service.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, names } from './support/hosts.js';
import { RecorderPlugin } from './support/recorder-plugin.js';

jest.setTimeout(60_000);

describe('start storms', () => {
  let db: TestDatabase;
  let apps: TestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { PLUGINS: 'physical:host' };
    const first = await startApp({ databaseUrl: db.url, env });
    first.clock.set(new Date('2032-01-01T00:00:00Z'));
    apps = [first];
    for (let i = 0; i < 2; i++) {
      apps.push(await startApp({ databaseUrl: db.url, env, clock: first.clock }));
    }
    await addHosts(first.http, names('storm', 40));
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });

  /**
   * Connection a changes the pools in an open transaction (and with `bumpNow` makes the
   * version bump its commit would make, holding it as a commit does); b makes a pool
   * change of its own meanwhile, which must commit at once (lock_timeout 3 s) and be seen
   * after its commit; then a commits: one bump per transaction however many rows changed.
   */
  async function raceWithOpenPoolChange(aggregate: string, bumpNow: boolean): Promise<void> {
    const a = await connect(db.url);
    const b = await connect(db.url);
    try {
      const version = async () =>
        Number((await a.query(`SELECT version FROM pool_state`)).rows[0].version);
      const before = await version();
      await a.query('BEGIN');
      await a.query(`UPDATE hosts SET updated_at = now()`);
      if (bumpNow) await a.query('SET CONSTRAINTS ALL IMMEDIATE');
      await b.query(`SET lock_timeout = '3s'`);
      await b.query('BEGIN');
      await b.query(
        `INSERT INTO aggregates (name, kind, created_at) VALUES ($1, 'topology', now())`,
        [aggregate],
      );
      await b.query('COMMIT');
      expect(Number((await b.query(`SELECT version FROM pool_state`)).rows[0].version)).toBe(
        before + 1,
      );
      await a.query('COMMIT');
      expect(await version()).toBe(before + 2);
    } finally {
      await a.query('ROLLBACK').catch(() => undefined);
      await a.end();
      await b.end();
    }
  }

  it('should not make a pool change wait for another open transaction when both change pools', async () => {
    // Before the fix, b's statement queued on pool_state behind a until its end.
    await raceWithOpenPoolChange('storm-b', false);
  });

  it('should not make a pool change wait at its commit for another committing pool change', async () => {
    // With one version row, b's commit queued behind a's.
    await raceWithOpenPoolChange('storm-c', true);
  });

  it('should answer every create with a lease when 40 creates race for 40 free hosts', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        apps[i % apps.length].http.post('/v1/leases').send({
          name: `race-${i}`,
          start_date: '2032-01-02 00:00',
          end_date: '2032-01-03 00:00',
          reservations: [hostReservation()],
        }),
      ),
    );
    const refused = results.filter((r) => r.status !== 201).map((r) => r.body);
    expect(refused).toEqual([]);
    const client = await connect(db.url);
    try {
      const used = await client.query(`SELECT count(DISTINCT host_id) AS n FROM host_allocations`);
      expect(Number(used.rows[0].n)).toBe(40);
    } finally {
      await client.end();
    }
  });
});

describe('a manager with its timer on', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('should claim more due events as soon as a slot frees, before its next poll', async () => {
    const recorder = new RecorderPlugin();
    const clock = new FakeClock(new Date('2033-01-01T00:00:00Z'));
    const config = loadConfig(
      {
        DATABASE_URL: db.url,
        PLUGINS: recorder.resourceType,
        LOG_LEVEL: 'error',
        EVENT_CONCURRENCY: '2',
        // The timer never fires during the test: only freed slots claim.
        EVENT_POLL_MS: '3600000',
      },
      { resourceTypes: [...BUILTIN_RESOURCE_TYPES, recorder.resourceType] },
    );
    const app = await buildApp(config, { clock, plugins: [recorder], logger: false });
    try {
      await app.init();
      const http = (await import('supertest')).default(app.getHttpServer());
      for (let i = 0; i < 8; i++) {
        await http
          .post('/v1/leases')
          .send({
            name: `refill-${i}`,
            start_date: '2033-01-01 01:00',
            end_date: '2033-01-02 00:00',
            reservations: [{ resource_type: recorder.resourceType }],
          })
          .expect(201);
      }
      clock.set(new Date('2033-01-01T01:00:00Z'));
      const manager = app.get(ManagerService);
      expect(await manager.tick()).toBe(2);
      const client = await connect(db.url);
      try {
        const done = async () =>
          Number(
            (
              await client.query(
                `SELECT count(*) AS n FROM events WHERE event_type = 'start_lease' AND status = 'DONE'`,
              )
            ).rows[0].n,
          );
        const until = Date.now() + 30_000;
        while ((await done()) < 8 && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(await done()).toBe(8);
      } finally {
        await client.end();
      }
    } finally {
      await app.close();
    }
  });
});
