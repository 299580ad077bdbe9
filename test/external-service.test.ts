import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';

interface Call {
  path: string;
  token: string | undefined;
  body: Record<string, unknown>;
}

type Answer = (call: Call, res: ServerResponse) => void;

/** The external enforcement service, as a small real HTTP server. */
async function fakeService(): Promise<{
  server: Server;
  url: string;
  calls: Call[];
  answer: { next: Answer };
}> {
  const calls: Call[] = [];
  const answer = { next: ((_, res) => res.writeHead(204).end()) as Answer };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const call = {
        path: req.url ?? '',
        token: req.headers['x-auth-token'] as string | undefined,
        body: JSON.parse(text) as Record<string, unknown>,
      };
      calls.push(call);
      answer.next(call, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/api/`, calls, answer };
}

describe('external enforcement service', () => {
  let db: TestDatabase;
  let t: TestApp;
  let svc: Awaited<ReturnType<typeof fakeService>>;

  beforeAll(async () => {
    svc = await fakeService();
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        PLUGINS: 'physical:host,test:recorder',
        EXTERNAL_SERVICE_URL: svc.url,
        EXTERNAL_SERVICE_TOKEN: 'sekrit',
        EXTERNAL_SERVICE_TIMEOUT_MS: '300',
      },
    });
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await addHosts(t.http, ['ext-1', 'ext-2']);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    svc?.server.closeAllConnections();
    await new Promise((resolve) => svc?.server.close(resolve));
  });
  beforeEach(() => {
    svc.calls.length = 0;
    svc.answer.next = (_, res) => res.writeHead(204).end();
  });

  async function leaseCount(): Promise<number> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM leases`);
      return rows[0].n as number;
    } finally {
      await client.end();
    }
  }

  function create(name = 'ext') {
    return t.http
      .post('/v1/leases')
      .set('X-Project-Id', 'proj')
      .set('X-User-Id', 'alice')
      .send({
        name,
        start_date: '2031-01-02 00:00',
        end_date: '2031-01-03 00:00',
        reservations: [hostReservation()],
      });
  }

  it("should create the lease when the service answers 204, after posting Blazar's body to check-create", async () => {
    const res = await create().expect(201);
    expect(svc.calls).toHaveLength(1);
    const [call] = svc.calls;
    expect(call.path).toBe('/api/check-create');
    expect(call.token).toBe('sekrit');
    expect(call.body.context).toEqual({
      user_id: 'alice',
      project_id: 'proj',
      auth_url: null,
      region_name: null,
    });
    expect(call.body.lease).toMatchObject({
      name: 'ext',
      start_date: '2031-01-02T00:00:00',
      end_date: '2031-01-03T00:00:00',
      user_id: 'alice',
      project_id: 'proj',
      reservations: [
        {
          resource_type: 'physical:host',
          min: 1,
          max: 1,
          allocations: [{ hypervisor_hostname: 'ext-1', vcpus: 8 }],
        },
      ],
    });
    expect(call.body.lease).not.toHaveProperty('id');
    await t.http.delete(`/v1/leases/${res.body.lease.id}`).expect(204);
  });

  it("should refuse with 400 and the service's message when it answers 403, writing nothing", async () => {
    const before = await leaseCount();
    svc.answer.next = (_, res) =>
      res
        .writeHead(403, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ message: 'Project proj is out of credits' }));
    const res = await create().expect(400);
    expect(res.body).toEqual({
      error_code: 400,
      error_name: 400,
      error_type: 'ExternalServiceFilterException',
      error_message: 'Project proj is out of credits',
    });
    expect(await leaseCount()).toBe(before);
  });

  it('should answer 504 when the service does not answer in time, writing nothing', async () => {
    const before = await leaseCount();
    svc.answer.next = (_, res) => setTimeout(() => res.writeHead(204).end(), 1000);
    const res = await create().expect(504);
    expect(res.body.error_type).toBe('ExternalServiceUnavailable');
    expect(res.body.error_message).toContain('did not answer check-create within 300 ms');
    expect(await leaseCount()).toBe(before);
  });

  it('should answer 503 when the service fails with 500, writing nothing', async () => {
    const before = await leaseCount();
    svc.answer.next = (_, res) => res.writeHead(500).end('Traceback: secret internals');
    const res = await create().expect(503);
    expect(res.body.error_message).toBe(
      'The external enforcement service answered check-create with 500 (204 allows, 403 ' +
        'refuses); nothing was changed, try again later',
    );
    expect(await leaseCount()).toBe(before);
  });

  it('should answer 503 when the service refuses connections, writing nothing', async () => {
    const before = await leaseCount();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const config = t.config.enforcement;
    const base = config.externalServiceUrl;
    config.externalServiceUrl = `http://127.0.0.1:${port}/`;
    try {
      const res = await create().expect(503);
      expect(res.body.error_message).toContain('could not be reached for check-create');
    } finally {
      config.externalServiceUrl = base;
    }
    expect(await leaseCount()).toBe(before);
  });

  it('should post the current and new lease to check-update and change nothing when refused', async () => {
    const lease = (await create('upd').expect(201)).body.lease;
    svc.calls.length = 0;
    svc.answer.next = (_, res) =>
      res.writeHead(403, { 'Content-Type': 'application/json' }).end('{"message": "too long"}');
    const res = await t.http
      .put(`/v1/leases/${lease.id}`)
      .set('X-Project-Id', 'proj')
      .send({ end_date: '2031-01-04 00:00' })
      .expect(400);
    expect(res.body.error_message).toBe('too long');
    const [call] = svc.calls;
    expect(call.path).toBe('/api/check-update');
    expect(call.body.current_lease).toMatchObject({
      id: lease.id,
      end_date: '2031-01-03T00:00:00',
      reservations: [{ allocations: [{ hypervisor_hostname: 'ext-1' }] }],
    });
    expect(call.body.lease).toMatchObject({ id: lease.id, end_date: '2031-01-04T00:00:00' });
    const after = (await t.http.get(`/v1/leases/${lease.id}`).expect(200)).body.lease;
    expect(after.end_date).toBe(lease.end_date);

    svc.answer.next = (_, res) => res.writeHead(204).end();
    await t.http
      .put(`/v1/leases/${lease.id}`)
      .set('X-Project-Id', 'proj')
      .send({ end_date: '2031-01-04 00:00' })
      .expect(200);
    await t.http.delete(`/v1/leases/${lease.id}`).expect(204);
  });

  it('should post on-end once when a lease ends, with its allocations, and end it even when on-end fails', async () => {
    const lease = (await create('ends').expect(201)).body.lease;
    t.clock.set(new Date('2031-01-02T00:01:00Z'));
    await t.settle();
    svc.calls.length = 0;
    svc.answer.next = (_, res) => res.writeHead(500).end();
    t.clock.set(new Date('2031-01-03T00:01:00Z'));
    await t.settle();
    const ends = svc.calls.filter((c) => c.path === '/api/on-end');
    expect(ends).toHaveLength(1);
    expect(ends[0].body.lease).toMatchObject({
      id: lease.id,
      reservations: [{ allocations: [{ hypervisor_hostname: 'ext-1' }] }],
    });
    const after = (await t.http.get(`/v1/leases/${lease.id}`).expect(200)).body.lease;
    expect(after.status).toBe('TERMINATED');
    const metrics = await t.http.get('/metrics');
    expect(metrics.text).toMatch(
      /climate_external_service_calls_total\{endpoint="on-end",result="failed"\} 1/,
    );
  });
});
