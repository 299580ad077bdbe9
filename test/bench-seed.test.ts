import { DataSource } from 'typeorm';
import { seed } from '../bench/seed.js';
import { startApp, type TestApp } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';

describe('the benchmark seed', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should report its progress after every chunk of hosts and seed them all', async () => {
    const ds = t.app.get(DataSource);
    const reports: [number, number][] = [];
    await seed(ds, 2500, 2, new Date('2035-01-01T00:00:00Z'), (done, total) =>
      reports.push([done, total]),
    );
    expect(reports).toEqual([
      [1000, 2500],
      [2000, 2500],
      [2500, 2500],
    ]);
    const [counts] = await ds.query(
      `SELECT (SELECT count(*) FROM hosts)::int AS hosts,
              (SELECT count(DISTINCT hypervisor_hostname) FROM hosts)::int AS names,
              (SELECT count(*) FROM host_allocations)::int AS allocations,
              (SELECT count(*) FROM events)::int AS events,
              (SELECT count(DISTINCT host_id) FROM host_allocations)::int AS busy_hosts`,
    );
    expect(counts).toEqual({
      hosts: 2500,
      names: 2500,
      allocations: 5000,
      events: 10000,
      busy_hosts: 2500,
    });
  });
});
