import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { buildOpenApiDocument, openApiJson } from '../src/common/openapi.js';
import { startApp, TestApp } from './support/app.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { hostReservation, slotReservation } from './support/hosts.js';
import { OpenApiChecker, registeredRoutes, RouteKey } from './support/openapi-checker.js';

const ADMIN = { 'X-Auth-Token': 'tok-admin' };
const MEMBER = { 'X-Auth-Token': 'tok-member' };
/** Refused by the input guard on every route: an error any route can be made to answer. */
const NUL_QUERY = '?q=%00';

interface Call {
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

describe('the OpenAPI document', () => {
  let db: TestDatabase;
  let t: TestApp;
  let served: Record<string, unknown>;
  let checker: OpenApiChecker;

  beforeAll(async () => {
    db = await createTestDatabase();
    const tokens = join(mkdtempSync(join(tmpdir(), 'tokens-')), 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        'tok-admin': { user_id: 'ops', project_id: 'admin', roles: ['admin'] },
        'tok-member': { user_id: 'u1', project_id: 'p1', roles: ['member'] },
      }),
    );
    t = await startApp({
      databaseUrl: db.url,
      env: {
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: tokens,
        PLUGINS: 'physical:host,virtual:instance,virtual:floatingip',
        CPU_ALLOCATION_RATIO: '1',
      },
    });
    // Without a token: the document is public.
    served = (await t.http.get('/openapi.json').expect(200)).body;
    checker = new OpenApiChecker(served);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** Calls `route` (its {params} filled in) and checks the answer against the document. */
  async function call(route: RouteKey, { params = {}, query = '', body, headers }: Call = {}) {
    const [method, template] = route.split(' ');
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => params[name]);
    const verb = method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    const request = t.http[verb](path + query).set(headers ?? ADMIN);
    const res: Response = body === undefined ? await request : await request.send(body as object);
    checker.record(route, res, body);
    return res;
  }

  it('should match docs/openapi.json when generated from the code (else run npm run docs:api)', () => {
    const committed = readFileSync(join(__dirname, '..', 'docs', 'openapi.json'), 'utf8');
    expect(served).toEqual(JSON.parse(committed));
    expect(openApiJson(buildOpenApiDocument(t.app))).toBe(committed);
  });

  it('should serve the Swagger UI and its assets from this process, without a token', async () => {
    const page = await t.http
      .get('/docs')
      .expect(200)
      .expect('Content-Type', /text\/html/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets).toContain('./docs/swagger-ui-bundle.js');
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//);
      await t.http.get(`/${asset.replace(/^\.\//, '')}`).expect(200);
    }
    const init = await t.http.get('/docs/swagger-ui-init.js').expect(200);
    expect(init.text).toContain('"title": "Climate reservation API"');
  });

  it('should describe every answer of every route when each is called, with success and with an error', async () => {
    await versions();
    await probes();
    const hosts = await hostRoutes();
    await leaseRoutes(hosts);
    await floatingIpRoutes();
    expect([...checker.problems, ...checker.coverage(registeredRoutes(t.app))]).toEqual([]);
  });

  async function versions(): Promise<void> {
    for (const route of ['GET /', 'GET /versions']) {
      await call(route, { headers: {} });
      await call(route, { headers: {}, query: NUL_QUERY });
    }
  }

  /**
   * Operators' routes answer what they like (text/plain for metrics): checked generically.
   * Without a token (the probes; /metrics refuses it) and with the admin's (/metrics).
   */
  async function probes(): Promise<void> {
    for (const route of registeredRoutes(t.app).filter((r) => !/ \/(v1|versions|$)/.test(r))) {
      await call(route, { headers: {} });
      await call(route, { headers: {}, query: NUL_QUERY });
      await call(route, { headers: ADMIN });
    }
  }

  async function addHost(name: string, capabilities: Record<string, string>): Promise<string> {
    const body = { name, vcpus: 8, memory_mb: 16384, local_gb: 100, ...capabilities };
    const res = await call('POST /v1/os-hosts', { body });
    expect(res.status).toBe(201);
    return res.body.host.id as string;
  }

  async function floatingIpRoutes(): Promise<void> {
    const address = { floating_network_id: 'oa-net', floating_ip_address: '198.51.100.9' };
    const made = await call('POST /v1/floatingips', { body: address });
    await call('POST /v1/floatingips', { body: address });
    await call('POST /v1/floatingips', { body: {}, headers: MEMBER });
    await call('GET /v1/floatingips');
    await call('GET /v1/floatingips', { headers: {} });
    const id = { id: made.body.floatingip.id as string };
    await call('GET /v1/floatingips/{id}', { params: id });
    await call('GET /v1/floatingips/{id}', { params: { id: randomUUID() } });
    // A floating-IP reservation in a lease, as the lease schemas describe it.
    const lease = await call('POST /v1/leases', {
      headers: MEMBER,
      body: {
        name: 'oa-fip',
        start_date: '2031-01-01 00:00',
        end_date: '2031-01-02 00:00',
        reservations: [{ resource_type: 'virtual:floatingip', network_id: 'oa-net', amount: 1 }],
      },
    });
    await call('DELETE /v1/floatingips/{id}', { params: id });
    await call('DELETE /v1/leases/{id}', { params: { id: lease.body.lease.id }, headers: MEMBER });
    await call('DELETE /v1/floatingips/{id}', { params: id });
  }

  async function hostRoutes(): Promise<string[]> {
    const ids = [
      await addHost('oa-1', { kind: 'metal' }),
      await addHost('oa-2', { kind: 'metal' }),
      await addHost('oa-3', { zone: 'oa' }),
      await addHost('oa-4', { zone: 'oa' }),
    ];
    const spare = await addHost('oa-5', { kind: 'spare' });
    await call('POST /v1/os-hosts', { body: { vcpus: 8 } });
    const absent = { id: '999999' };
    for (const route of ['GET /v1/os-hosts', 'GET /v1/os-hosts/properties', 'GET /v1/pools']) {
      await call(route);
      await call(route, { headers: MEMBER });
      await call(route, { headers: {} });
    }
    await call('GET /v1/os-hosts/properties', { query: '?detail=True&all=True' });
    await call('PATCH /v1/os-hosts/properties/{name}', {
      params: { name: 'kind' },
      body: { private: true },
    });
    await call('PATCH /v1/os-hosts/properties/{name}', {
      params: { name: 'absent' },
      body: { private: true },
    });
    await call('GET /v1/os-hosts/{id}', { params: { id: ids[0] } });
    await call('GET /v1/os-hosts/{id}', { params: absent });
    await call('PUT /v1/os-hosts/{id}', { params: { id: ids[0] }, body: { rack_note: 'r1' } });
    await call('PUT /v1/os-hosts/{id}', { params: { id: ids[0] }, body: {} });
    await call('PUT /v1/os-hosts/{id}/pool', { params: { id: spare }, body: { pool: 'shared' } });
    await call('PUT /v1/os-hosts/{id}/pool', { params: { id: spare }, body: { pool: 'nowhere' } });
    await call('DELETE /v1/os-hosts/{id}', { params: { id: spare } });
    await call('DELETE /v1/os-hosts/{id}', { params: { id: spare } });
    await powerRoutes(ids[0]);
    return ids;
  }

  async function powerRoutes(host: string): Promise<void> {
    await call('GET /v1/power-plan');
    await call('GET /v1/power-plan', { headers: MEMBER });
    const power = 'PUT /v1/os-hosts/{id}/power';
    await call(power, { params: { id: host }, body: { always_on: true } });
    await call(power, { params: { id: host }, body: { always_on: 'maybe' } });
    await call(power, { params: { id: '999999' }, body: { always_on: false } });
  }

  async function leaseRoutes(hosts: string[]): Promise<void> {
    const key = { ...ADMIN, 'Idempotency-Key': 'openapi-1' };
    const wholeHosts = {
      name: 'oa-hosts',
      start_date: '2030-02-01 00:00',
      end_date: '2030-02-02 00:00',
      reservations: [hostReservation({ resource_properties: '["==", "$kind", "metal"]' })],
    };
    const created = await call('POST /v1/leases', { body: wholeHosts, headers: key });
    const replayed = await call('POST /v1/leases', { body: wholeHosts, headers: key });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    await call('POST /v1/leases', { body: { start_date: 'now' } });
    const slots = await call('POST /v1/leases', {
      body: {
        name: 'oa-slots',
        start_date: 'now',
        end_date: '2030-01-02 00:00',
        reservations: [slotReservation('oa', { amount: 2 })],
      },
    });
    await t.settle();
    const lease = { id: created.body.lease.id as string };
    const slotLease = { id: slots.body.lease.id as string };
    const reservation = { id: slots.body.lease.reservations[0].id as string };

    const claim = await call('POST /v1/reservations/{id}/claims', {
      params: reservation,
      body: { server_id: 'srv-1' },
    });
    await call('POST /v1/reservations/{id}/claims', { params: reservation, body: {} });
    const shown = await call('GET /v1/leases/{id}', { params: slotLease });
    expect(shown.body.lease.reservations[0].claims).toHaveLength(1);
    await call('GET /v1/leases', {});
    await call('GET /v1/leases', { query: '?limit=0' });
    await call('GET /v1/leases/{id}', { params: { id: randomUUID() } });
    await call('DELETE /v1/claims/{id}', { params: { id: claim.body.claim.id } });
    await call('DELETE /v1/claims/{id}', { params: { id: claim.body.claim.id } });

    const etag = String(created.headers.etag);
    await call('PUT /v1/leases/{id}', {
      params: lease,
      body: { name: 'oa-renamed' },
      headers: { ...ADMIN, 'If-Match': etag },
    });
    await call('PUT /v1/leases/{id}', {
      params: lease,
      body: { name: 'late' },
      headers: { ...ADMIN, 'If-Match': etag },
    });

    await allocationRoutes(hosts[0], lease.id);
    await call('POST /v1/scheduler/filter', {
      body: { project_id: 'admin', hosts: ['oa-1', 'oa-3'], user_id: null, hints: {} },
    });
    await call('POST /v1/scheduler/filter', {
      query: '?explain=true',
      body: { project_id: 'admin', hosts: ['oa-1', 'oa-3'], hints: {} },
    });
    await call('POST /v1/scheduler/filter', { body: { hosts: ['oa-1'] } });

    await call('DELETE /v1/leases/{id}', { params: lease });
    await call('DELETE /v1/leases/{id}', { params: lease });
  }

  async function allocationRoutes(host: string, leaseId: string): Promise<void> {
    await call('GET /v1/os-hosts/allocations');
    await call('GET /v1/os-hosts/allocations', { query: `?lease_id=${leaseId}` });
    await call('GET /v1/os-hosts/allocations', { query: '?lease_id=nope' });
    await call('GET /v1/os-hosts/{id}/allocation', { params: { id: host } });
    await call('GET /v1/os-hosts/{id}/allocation', { params: { id: '999999' } });
    await call('GET /v1/os-hosts/capacity', {
      query: '?start=2030-02-01%2000:00&end=2030-02-02%2000:00&step=6h',
    });
    await call('GET /v1/os-hosts/capacity', { query: '?end=2030-02-02%2000:00' });
    await call('GET /v1/os-hosts/availability', { query: '?duration=2h&count=2' });
    await call('GET /v1/os-hosts/availability', { query: '?count=2' });
    await call('GET /v1/instances/availability', {
      query: '?duration=2h&amount=2&vcpus=2&memory_mb=1024&disk_gb=10&affinity=false',
    });
    await call('GET /v1/instances/availability', { query: '?duration=2h&vcpus=2' });
  }
});
