import type { Response } from 'supertest';
import { startApp, TestApp } from './support/app.js';
import {
  connect,
  createTestDatabase,
  TEST_DATABASE_URL,
  TestDatabase,
} from './support/database.js';
import { createLease, sleep, waitFor } from './support/seed.js';
import { TcpProxy } from './support/tcp-proxy.js';

jest.setTimeout(60_000);

/** A proxy in front of the test's PostgreSQL, and the database's URL through it. */
function databaseProxy(): TcpProxy {
  const upstream = new URL(TEST_DATABASE_URL);
  return new TcpProxy(upstream.hostname, Number(upstream.port || 5432));
}
function throughProxy(proxy: TcpProxy, database: TestDatabase): string {
  const url = new URL(database.url);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return url.toString();
}

/** Not ready (terminus' body, the database down), while still alive. */
function expectNotReady(res: Response): void {
  expect(res.status).toBe(503);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body).toMatchObject({ status: 'error', error: { database: { status: 'down' } } });
}

function expectUnavailable(res: Response): void {
  expect(res.status).toBe(503);
  expect(res.body).toEqual({
    error_code: 503,
    error_name: 503,
    error_message: expect.any(String),
    error_type: 'ServiceUnavailable',
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - started };
}

describe('PostgreSQL down or restarting', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = databaseProxy();
    await proxy.listen();
    t = await startApp({
      databaseUrl: throughProxy(proxy, db),
      env: { DATABASE_CONNECT_TIMEOUT_MS: '1000' },
    });
  });
  afterAll(async () => {
    proxy.mode = 'forward';
    if (t !== undefined) await t.close().catch(() => undefined);
    await proxy.cut();
    await db?.drop();
  });

  async function recovers(leaseId: string): Promise<void> {
    // By itself: no restart, no reconnect call; the pool makes new connections.
    const leases = await waitFor('the lease list to answer 200 again', async () => {
      const res = await t.http.get('/v1/leases');
      return res.status === 200 ? (res.body.leases as { id: string }[]) : undefined;
    });
    expect(leases.map((l) => l.id)).toContain(leaseId);
    await t.http.get('/readyz').expect(200);
    await t.http.get(`/v1/leases/${leaseId}`).expect(200);
  }

  it('should answer 503 quickly when the database refuses connections and 200 again once it is back', async () => {
    const lease = await createLease(t, {
      name: 'before',
      start: '2030-02-01 00:00',
      end: '2030-02-02 00:00',
    });
    await t.http.get('/v1/leases').expect(200);
    await t.http.get('/readyz').expect(200);

    await proxy.cut();

    const list = await timed(() => t.http.get('/v1/leases'));
    expectUnavailable(list.value);
    expect(list.ms).toBeLessThan(3_000);
    const ready = await timed(() => t.http.get('/readyz'));
    expectNotReady(ready.value);
    expect(ready.ms).toBeLessThan(3_000);
    // Alive all the same: a restart would not bring the database back.
    await t.http.get('/healthz').expect(200);
    // A write (a transaction) is a 503 too, and nothing of it is kept.
    const create = await t.http
      .post('/v1/leases')
      .send({ name: 'during', start_date: '2030-02-01 00:00', end_date: '2030-02-02 00:00' });
    expectUnavailable(create);

    await proxy.listen();
    await recovers(lease.id);
    const names = (await t.http.get('/v1/leases').expect(200)).body.leases.map(
      (l: { name: string }) => l.name,
    );
    expect(names).toEqual(['before']);
  });

  it('should answer 503 within the connect timeout when the database accepts connections but never answers', async () => {
    const lease = await createLease(t, {
      name: 'kept',
      start: '2030-03-01 00:00',
      end: '2030-03-02 00:00',
    });
    proxy.mode = 'blackhole';
    // The pool's idle connections die with the old sockets; new ones hang.
    proxy.dropAll();
    await sleep(100);

    const list = await timed(() => t.http.get('/v1/leases'));
    expectUnavailable(list.value);
    expect(list.ms).toBeLessThan(4_000);
    const ready = await timed(() => t.http.get('/readyz'));
    expectNotReady(ready.value);
    expect(ready.ms).toBeLessThan(4_000);
    const metrics = await timed(() => t.http.get('/metrics'));
    expect(metrics.value.status).toBe(200);
    expect(metrics.value.text).toContain('climate_metrics_collect_errors_total 1');
    expect(metrics.value.text).not.toContain('climate_leases{');
    expect(metrics.ms).toBeLessThan(4_000);
    await t.http.get('/healthz').expect(200);

    proxy.mode = 'forward';
    proxy.dropAll();
    await recovers(lease.id);
  });

  it('should answer 503 when PostgreSQL terminates the connection of a running query (57P01)', async () => {
    const lease = await createLease(t, {
      name: 'again',
      start: '2030-04-01 00:00',
      end: '2030-04-02 00:00',
    });
    const admin = await connect(db.url);
    try {
      // A list whose query is held by a lock on the lease table, then its backend killed as
      // a fast shutdown does (57P01 admin_shutdown).
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE leases IN ACCESS EXCLUSIVE MODE');
      const pending = t.http.get('/v1/leases').then((r) => r);
      await waitFor('the list to wait on the lock', async () => {
        const { rows } = await admin.query(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'climate'
              AND wait_event_type = 'Lock'`,
        );
        return rows.length > 0 ? rows : undefined;
      });
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'climate'`,
      );
      expectUnavailable(await pending);
      await admin.query('ROLLBACK');
    } finally {
      await admin.end();
    }
    await recovers(lease.id);
  });
});
