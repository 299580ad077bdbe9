import { register as globalRegistry } from 'prom-client';
import { Metrics } from '../src/observability/metrics.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, slotReservation } from './support/hosts.js';

const tenant = { 'X-Project-Id': 'tenant', 'X-User-Id': 't', 'X-Roles': 'member' };

/** The value of one sample of the exposition text; undefined when it is absent. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  let db: TestDatabase;
  let t: TestApp;
  const scrape = async () => (await t.http.get('/metrics').expect(200)).text;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'test:recorder,virtual:instance', CPU_ALLOCATION_RATIO: '1' },
    });
    t.clock.set(new Date('2042-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should label requests by route pattern, never by the ids in the URL', async () => {
    const lease = await t.http
      .post('/v1/leases')
      .send({ name: 'ids', start_date: '2042-03-01 00:00', end_date: '2042-03-02 00:00' })
      .expect(201);
    const id = lease.body.lease.id as string;
    await t.http.get(`/v1/leases/${id}`).expect(200);
    await t.http.get(`/v1/leases/${id}.json`).expect(200);
    await t.http.get('/v1/no-such-thing/zz-unrouted').expect(404);

    const res = await t.http.get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.text;
    const requests = (route: string, status: string, method = 'GET') =>
      sample(text, 'climate_http_request_duration_seconds_count', { method, route, status });
    expect(requests('/v1/leases/:id', '200')).toBe(2);
    expect(requests('/v1/leases', '201', 'POST')).toBe(1);
    expect(requests('unmatched', '404')).toBe(1);
    expect(text).not.toContain(id);
    expect(text).not.toContain('zz-unrouted');
  });

  it('should count events done and retried and observe their lag from the scheduled time', async () => {
    await t.http
      .post('/v1/leases')
      .send({
        name: 'events',
        start_date: '2042-01-01 01:00',
        end_date: '2042-01-10 00:00',
        reservations: [{ resource_type: 'test:recorder' }],
      })
      .expect(201);
    t.recorder.failNext('on_start');
    t.clock.set(new Date('2042-01-01T01:00:30Z'));
    await t.settle();
    t.clock.set(new Date('2042-01-01T01:10:00Z'));
    await t.settle();

    const text = await scrape();
    expect(sample(text, 'climate_events_total', { type: 'start_lease', result: 'retried' })).toBe(
      1,
    );
    expect(sample(text, 'climate_events_total', { type: 'start_lease', result: 'done' })).toBe(1);
    expect(sample(text, 'climate_event_lag_seconds_count', { type: 'start_lease' })).toBe(1);
    // Done at 01:10:00 for 01:00: 600 s late.
    expect(sample(text, 'climate_event_lag_seconds_sum', { type: 'start_lease' })).toBe(600);
    expect(sample(text, 'climate_leases', { status: 'ACTIVE' })).toBe(1);
    expect(sample(text, 'climate_leases', { status: 'PENDING' })).toBe(1);
    expect(sample(text, 'climate_leases', { status: 'ERROR' })).toBe(0);
  });

  it('should count claims and heals and read pools and degraded leases at scrape time', async () => {
    const hostIds = await addHosts(t.http, ['mx-1', 'mx-2'], () => ({ zone: 'mx' }));
    let text = await scrape();
    expect(sample(text, 'climate_pool_hosts', { pool: 'freepool', reservable: 'true' })).toBe(2);
    expect(sample(text, 'climate_pool_hosts', { pool: 'shared', reservable: 'true' })).toBe(0);

    const lease = await t.http
      .post('/v1/leases')
      .set(tenant)
      .send({
        name: 'slots',
        start_date: 'now',
        end_date: '2042-01-05 00:00',
        reservations: [slotReservation('mx', { amount: 1 })],
      })
      .expect(201);
    await t.settle();
    const reservationId = lease.body.lease.reservations[0].id as string;
    const claim = (server: string) =>
      t.http
        .post(`/v1/reservations/${reservationId}/claims`)
        .set(tenant)
        .send({ server_id: server });
    const granted = await claim('vm-1').expect(201);
    await claim('vm-2').expect(409);
    await t.http.delete(`/v1/claims/${granted.body.claim.id}`).set(tenant).expect(204);

    // Its host fails: the slot moves to the other; that one fails too: it cannot move.
    const slotHost = granted.body.claim.host === 'mx-1' ? 0 : 1;
    await t.http.put(`/v1/os-hosts/${hostIds[slotHost]}`).send({ reservable: false }).expect(200);
    await t.http
      .put(`/v1/os-hosts/${hostIds[1 - slotHost]}`)
      .send({ reservable: false })
      .expect(200);

    text = await scrape();
    expect(sample(text, 'climate_claims_total', { result: 'granted' })).toBe(1);
    expect(sample(text, 'climate_claims_total', { result: 'refused' })).toBe(1);
    expect(sample(text, 'climate_claims_total', { result: 'released' })).toBe(1);
    expect(sample(text, 'climate_healing_moves_total', { result: 'moved' })).toBe(1);
    expect(sample(text, 'climate_healing_moves_total', { result: 'unmovable' })).toBe(1);
    expect(sample(text, 'climate_leases_degraded')).toBe(1);
    expect(sample(text, 'climate_pool_hosts', { pool: 'freepool', reservable: 'false' })).toBe(2);
    expect(sample(text, 'climate_pool_hosts', { pool: 'freepool', reservable: 'true' })).toBe(0);
  });

  it('should expose the database pool and process metrics in a registry of its own', async () => {
    const text = await scrape();
    // 10, plus EVENT_CONCURRENCY where the manager runs (DATABASE_POOL_SIZE).
    expect(sample(text, 'climate_db_pool_connections', { state: 'max' })).toBe(26);
    expect(sample(text, 'climate_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    expect(sample(text, 'climate_db_pool_waiting')).toBe(0);
    expect(sample(text, 'climate_metrics_collect_errors_total')).toBe(0);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeDefined();
    // Not prom-client's global registry: many apps live in one test process.
    expect(await globalRegistry.metrics()).not.toContain('climate_');
    expect(t.app.get(Metrics).registry).not.toBe(globalRegistry);
  });
});
