import { startApp, type TestApp } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { addHosts } from './support/hosts.js';

/** The API parameters the web page needs: a lease list's time window, a host filter. */
describe('GET /v1/leases?start&end and GET /v1/os-hosts?resource_properties', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
    await addHosts(t.http, ['w-1', 'w-2', 'w-3'], (_name, i) => ({ rack: i < 2 ? 'a' : 'b' }));
    for (const [name, start, end] of [
      ['jan', '2030-01-10 00:00', '2030-01-20 00:00'],
      ['feb', '2030-02-10 00:00', '2030-02-20 00:00'],
      ['mar', '2030-03-10 00:00', '2030-03-20 00:00'],
    ]) {
      await t.http
        .post('/v1/leases')
        .send({ name, start_date: start, end_date: end, reservations: [] })
        .expect(201);
    }
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const names = async (query: Record<string, string>) =>
    (
      (await t.http.get('/v1/leases').query(query).expect(200)).body as {
        leases: { name: string }[];
      }
    ).leases
      .map((l) => l.name)
      .sort();

  it('should list the leases overlapping the window only', async () => {
    expect(await names({})).toEqual(['feb', 'jan', 'mar']);
    expect(await names({ start: '2030-01-25 00:00', end: '2030-03-01 00:00' })).toEqual(['feb']);
    // Touching is not overlapping: a lease ending at `start` or starting at `end` is out.
    expect(await names({ start: '2030-01-20 00:00', end: '2030-02-10 00:00' })).toEqual([]);
    expect(await names({ start: '2030-02-15 00:00' })).toEqual(['feb', 'mar']);
    expect(await names({ end: '2030-02-15 00:00' })).toEqual(['feb', 'jan']);
  });

  it('should refuse a bad window date with a 400', async () => {
    const res = await t.http.get('/v1/leases').query({ start: 'yesterday-ish' }).expect(400);
    expect(res.body.error_code).toBe(400);
  });

  it('should list the hosts a requirement matches, and refuse a malformed one', async () => {
    const all = await t.http.get('/v1/os-hosts').expect(200);
    expect(all.body.hosts).toHaveLength(3);
    const a = await t.http
      .get('/v1/os-hosts')
      .query({ resource_properties: '["==", "$rack", "a"]' })
      .expect(200);
    expect(a.body.hosts.map((h: { hypervisor_hostname: string }) => h.hypervisor_hostname)).toEqual(
      ['w-1', 'w-2'],
    );
    const bad = await t.http
      .get('/v1/os-hosts')
      .query({ resource_properties: '["=="' })
      .expect(400);
    expect(bad.body.error_code).toBe(400);
  });
});
