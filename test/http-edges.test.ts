import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const REQUEST_ID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('HTTP behaviour shared by every route', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it.each(['/', '/versions'])(
    'should answer %s with 300 and the versions document',
    async (path) => {
      const res = await t.http.get(path).set('X-Roles', '').expect(300);
      expect(res.body.versions).toHaveLength(1);
      expect(res.body.versions[0]).toMatchObject({
        id: 'v1.0',
        status: 'CURRENT',
        min_version: '1.0',
        max_version: '1.0',
      });
      expect(res.body.versions[0].links[0].href).toMatch(/\/v1$/);
    },
  );

  it('should not believe X-Forwarded-Proto when TRUST_PROXY names no proxy', async () => {
    const res = await t.http.get('/').set('X-Forwarded-Proto', 'https').expect(300);
    expect(res.body.versions[0].links[0].href).toMatch(/^http:\/\//);
  });

  it('should put a request id on every response, errors included', async () => {
    for (const res of [
      await t.http.get('/v1/leases'),
      await t.http.get('/v1/nothing-here'),
      await t.http.post('/v1/leases').send({}),
    ]) {
      expect(res.headers['x-openstack-request-id']).toMatch(REQUEST_ID);
    }
    const a = await t.http.get('/v1/leases');
    const b = await t.http.get('/v1/leases');
    expect(a.headers['x-openstack-request-id']).not.toBe(b.headers['x-openstack-request-id']);
  });

  it('should echo the microversion and refuse ones it does not serve', async () => {
    const ok = await t.http
      .get('/v1/leases')
      .set('OpenStack-API-Version', 'reservation 1.0')
      .expect(200);
    expect(ok.headers['openstack-api-version']).toBe('reservation 1.0');
    expect(ok.headers.vary).toContain('OpenStack-API-Version');
    await t.http.get('/v1/leases').set('OpenStack-API-Version', 'reservation latest').expect(200);
    const future = await t.http
      .get('/v1/leases')
      .set('OpenStack-API-Version', 'reservation 1.1')
      .expect(406);
    expect(future.body).toEqual({
      error: 406,
      error_message: 'Version 1.1 is not supported by the API. Minimum is 1.0 and maximum is 1.0.',
    });
    const garbage = await t.http
      .get('/v1/leases')
      .set('OpenStack-API-Version', 'reservation abc')
      .expect(400);
    expect(garbage.body.error_message).toBe(
      'API Version String abc is of invalid format. Must be of format MajorNum.MinorNum.',
    );
  });

  it('should serve .json suffixes, refuse other content types and answer unknown routes in the Blazar body', async () => {
    const list = await t.http.get('/v1/leases.json').expect(200);
    expect(Array.isArray(list.body.leases)).toBe(true);
    const xml = await t.http
      .post('/v1/leases')
      .set('Content-Type', 'application/xml')
      .send('<lease/>')
      .expect(400);
    expect(xml.body.error_message).toBe("Content type 'application/xml' isn't supported");
    const missing = await t.http.get('/v1/nothing-here').expect(404);
    expect(missing.body).toMatchObject({ error_code: 404, error_type: 'NotFound' });
  });

  it('should report live and ready when the database answers', async () => {
    const live = await t.http.get('/healthz').expect(200);
    expect(live.body).toMatchObject({ status: 'ok' });
    const ready = await t.http.get('/readyz').expect(200);
    expect(ready.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' } } });
  });
});

describe('AUTH_STRATEGY=tokens', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const file = join(mkdtempSync(join(tmpdir(), 'tokens-')), 'tokens.json');
    writeFileSync(
      file,
      JSON.stringify({
        'tok-alice': { user_id: 'alice', project_id: 'pa', roles: ['member'] },
        'tok-bob': { user_id: 'bob', project_id: 'pb', roles: ['member'] },
        'tok-ops': { user_id: 'ops', project_id: 'admin', roles: ['admin'] },
      }),
    );
    t = await startApp({
      databaseUrl: db.url,
      env: {
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: file,
        PLUGINS: 'physical:host',
        TRUST_PROXY: 'loopback',
      },
    });
    t.clock.set(new Date('2038-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should refuse requests without a known token with 401', async () => {
    const none = await t.http.get('/v1/leases').expect(401);
    expect(none.body.error_type).toBe('Unauthorized');
    await t.http.get('/v1/leases').set('X-Auth-Token', 'forged').expect(401);
    // identity headers mean nothing under this strategy
    await t.http.get('/v1/leases').set('X-Project-Id', 'pa').set('X-Roles', 'admin').expect(401);
    await t.http.get('/versions').expect(300);
  });

  it('should link with the scheme and host a trusted TLS proxy forwards', async () => {
    const res = await t.http
      .get('/')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 'climate.example.org')
      .expect(300);
    expect(res.body.versions[0].links[0].href).toBe('https://climate.example.org/v1');
  });

  it('should act as the token owner and keep projects apart', async () => {
    const created = await t.http
      .post('/v1/leases')
      .set('X-Auth-Token', 'tok-alice')
      .send({ name: 'alice', start_date: '2038-02-01 00:00', end_date: '2038-02-02 00:00' })
      .expect(201);
    expect(created.body.lease).toMatchObject({ project_id: 'pa', user_id: 'alice' });
    const id = created.body.lease.id;
    await t.http.get(`/v1/leases/${id}`).set('X-Auth-Token', 'tok-bob').expect(404);
    await t.http.delete(`/v1/leases/${id}`).set('X-Auth-Token', 'tok-bob').expect(404);
    expect((await t.http.get('/v1/leases').set('X-Auth-Token', 'tok-bob')).body.leases).toEqual([]);
    await t.http.get(`/v1/leases/${id}`).set('X-Auth-Token', 'tok-ops').expect(200);
    await t.http.get('/v1/os-hosts').set('X-Auth-Token', 'tok-alice').expect(403);
    await t.http.get('/v1/os-hosts').set('X-Auth-Token', 'tok-ops').expect(200);
  });
});
