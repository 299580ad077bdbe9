import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, TestApp } from './support/app.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';
import { OpenApiChecker, RouteKey } from './support/openapi-checker.js';

jest.setTimeout(120_000);

/** Callers: project p1 with each role (admin implies member implies reader), and p2. */
const TOKENS = {
  admin: { user_id: 'ops', project_id: 'admin-project', roles: ['admin'] },
  member: { user_id: 'm1', project_id: 'p1', roles: ['member'] },
  reader: { user_id: 'r1', project_id: 'p1', roles: ['reader'] },
  none: { user_id: 'n1', project_id: 'p1', roles: [] },
  other: { user_id: 'm2', project_id: 'p2', roles: ['member'] },
};
type Who = keyof typeof TOKENS;
const WHO = Object.keys(TOKENS) as Who[];

/** What a caller gets: through the policy (ok), refused (403), or told it is not there (404). */
type Outcome = 'ok' | 403 | 404;
/** One outcome per caller, in WHO's order. */
type Row = [Outcome, Outcome, Outcome, Outcome, Outcome];

const ALL: Row = ['ok', 'ok', 'ok', 'ok', 'ok'];
const ADMIN: Row = ['ok', 403, 403, 403, 403];
const READER: Row = ['ok', 'ok', 'ok', 403, 'ok'];
const MEMBER: Row = ['ok', 'ok', 403, 403, 'ok'];
/** p1's own lease: p2 is told it does not exist. */
const READ_OWN: Row = ['ok', 'ok', 'ok', 403, 404];
const WRITE_OWN: Row = ['ok', 'ok', 403, 403, 404];

/** The default rules, every route of the document. */
const DEFAULTS: Record<RouteKey, Row> = {
  'GET /': ALL,
  'GET /versions': ALL,
  'GET /healthz': ALL,
  'GET /readyz': ALL,
  'GET /metrics': ADMIN,
  'GET /v1/leases': READER,
  'POST /v1/leases': MEMBER,
  'GET /v1/leases/{id}': READ_OWN,
  'PUT /v1/leases/{id}': WRITE_OWN,
  'DELETE /v1/leases/{id}': WRITE_OWN,
  'POST /v1/reservations/{id}/claims': WRITE_OWN,
  // No such claim: whoever passes the rule is told so.
  'DELETE /v1/claims/{id}': [404, 404, 403, 403, 404],
  'GET /v1/os-hosts': ADMIN,
  'POST /v1/os-hosts': ADMIN,
  'GET /v1/os-hosts/properties': ADMIN,
  'PATCH /v1/os-hosts/properties/{name}': ADMIN,
  'GET /v1/os-hosts/allocations': ADMIN,
  'GET /v1/os-hosts/capacity': READER,
  'GET /v1/os-hosts/availability': READER,
  'GET /v1/instances/availability': READER,
  'GET /v1/os-hosts/{id}': ADMIN,
  'PUT /v1/os-hosts/{id}': ADMIN,
  // No such host (so nothing is removed): the admin is told so.
  'DELETE /v1/os-hosts/{id}': [404, 403, 403, 403, 403],
  'GET /v1/os-hosts/{id}/allocation': ADMIN,
  'PUT /v1/os-hosts/{id}/pool': ADMIN,
  'POST /v1/scheduler/filter': ADMIN,
  'GET /v1/pools': ADMIN,
  'GET /v1/power-plan': ADMIN,
  'PUT /v1/os-hosts/{id}/power': ADMIN,
  'GET /v1/floatingips': READER,
  'POST /v1/floatingips': ADMIN,
  'GET /v1/floatingips/{id}': READER,
  // No such address (so nothing is removed): the admin is told so.
  'DELETE /v1/floatingips/{id}': [404, 403, 403, 403, 403],
};

/** A site that opens the host calendar to members and closes availability to readers. */
const CALENDAR_POLICY = [
  '# the calendar for project members',
  '"blazar:oshosts:get": "rule:admin or role:member"',
  '"blazar:oshosts:get_allocations": "rule:admin or role:member"',
  '"climate:availability:get": "rule:project_member_or_admin"',
].join('\n');
const CALENDAR: Record<RouteKey, Row> = {
  ...DEFAULTS,
  'GET /v1/os-hosts': MEMBER,
  'GET /v1/os-hosts/{id}': MEMBER,
  'GET /v1/os-hosts/allocations': MEMBER,
  'GET /v1/os-hosts/{id}/allocation': MEMBER,
  'GET /v1/os-hosts/availability': MEMBER,
};

interface World {
  t: TestApp;
  db: TestDatabase;
  hostId: string;
  leaseId: string;
  reservationId: string;
  floatingipId: string;
}

function tokensFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'policy-')), 'tokens.json');
  const entries = Object.fromEntries(WHO.map((w) => [`tok-${w}`, TOKENS[w]]));
  writeFileSync(file, JSON.stringify(entries));
  return file;
}

async function world(policy?: string): Promise<World> {
  const db = await createTestDatabase();
  const env: Record<string, string> = {
    AUTH_STRATEGY: 'tokens',
    AUTH_TOKENS_FILE: tokensFile(),
    PLUGINS: 'physical:host,virtual:instance,virtual:floatingip',
  };
  if (policy !== undefined) {
    env.POLICY_FILE = join(mkdtempSync(join(tmpdir(), 'policy-')), 'policy.yaml');
    writeFileSync(env.POLICY_FILE, policy);
  }
  const t = await startApp({ databaseUrl: db.url, env });
  const [hostId] = await addHostsAs(t, ['cal-1', 'cal-2']);
  // Instance slots go here only (its zone); a whole-host lease may take it too.
  await addHostsAs(t, ['cal-3'], () => ({ zone: 'slots' }));
  const lease = await t.http
    .post('/v1/leases')
    .set('X-Auth-Token', 'tok-member')
    .send({
      name: 'p1-secret-name',
      start_date: '2030-02-01 00:00',
      end_date: '2030-02-02 00:00',
      reservations: [hostReservation()],
    })
    .expect(201);
  const body = lease.body as { lease: { id: string; reservations: { id: string }[] } };
  const address = await t.http
    .post('/v1/floatingips')
    .set('X-Auth-Token', 'tok-admin')
    .send({ floating_network_id: 'net', floating_ip_address: '198.51.100.1' })
    .expect(201);
  return {
    t,
    db,
    hostId,
    floatingipId: (address.body as { floatingip: { id: string } }).floatingip.id,
    leaseId: body.lease.id,
    reservationId: body.lease.reservations[0].id,
  };
}

function addHostsAs(
  t: TestApp,
  names: string[],
  extra?: Parameters<typeof addHosts>[2],
): Promise<string[]> {
  const http = {
    post: (path: string) => t.http.post(path).set('X-Auth-Token', 'tok-admin'),
  } as unknown as Parameters<typeof addHosts>[0];
  return addHosts(http, names, extra);
}

/** A request each route takes from a caller the policy lets through, changing nothing. */
function requestFor(route: RouteKey, w: World): { path: string; body?: unknown; ifMatch?: string } {
  const [, template] = route.split(' ');
  const ids: Record<string, string> = {
    id: template.startsWith('/v1/leases')
      ? w.leaseId
      : template.startsWith('/v1/reservations')
        ? w.reservationId
        : template.startsWith('/v1/claims') || route === 'DELETE /v1/floatingips/{id}'
          ? randomUUID()
          : template.startsWith('/v1/floatingips')
            ? w.floatingipId
            : route === 'DELETE /v1/os-hosts/{id}'
              ? '999999'
              : w.hostId,
    name: 'no-such-property',
  };
  let path = template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]);
  if (route === 'GET /v1/os-hosts/capacity')
    path += '?start=2030-01-02%2000:00&end=2030-03-01%2000:00';
  if (route === 'GET /v1/os-hosts/availability') path += '?count=1&duration=1h';
  if (route === 'GET /v1/instances/availability')
    path += '?amount=1&vcpus=1&memory_mb=512&disk_gb=1&duration=1h';
  // A stale version: refused (412) after the policy, so nothing changes.
  const ifMatch =
    route.startsWith('PUT /v1/leases') || route.startsWith('DELETE /v1/leases') ? '"0"' : undefined;
  // Bodies refused as bad input (or a stale version) after the policy: nothing changes.
  const body = route.endsWith('/claims')
    ? { server_id: 'srv-1' }
    : route.startsWith('POST') || route.startsWith('PUT') || route.startsWith('PATCH')
      ? {}
      : undefined;
  return { path, body, ifMatch };
}

async function matrix(w: World, expected: Record<RouteKey, Row>, checker: OpenApiChecker) {
  const served = (await w.t.http.get('/openapi.json').expect(200)).body as {
    paths: Record<string, Record<string, { 'x-policy'?: string }>>;
  };
  const routes = Object.entries(served.paths).flatMap(([path, item]) =>
    Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
  );
  expect(routes.filter((r) => expected[r] === undefined)).toEqual([]);
  const got: Record<RouteKey, Outcome[]> = {};
  const wrongRule: string[] = [];
  for (const route of routes) {
    const [method, template] = route.split(' ');
    const rule = served.paths[template][method.toLowerCase()]['x-policy'];
    got[route] = [];
    for (const who of WHO) {
      const { path, body, ifMatch } = requestFor(route, w);
      const verb = method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
      let req = w.t.http[verb](path).set('X-Auth-Token', `tok-${who}`);
      if (ifMatch !== undefined) req = req.set('If-Match', ifMatch);
      const res = body === undefined ? await req : await req.send(body as object);
      checker.record(route, res);
      const outcome: Outcome = res.status === 403 ? 403 : res.status === 404 ? 404 : 'ok';
      got[route].push(outcome);
      if (
        res.status === 403 &&
        res.body.error_message !== `Policy doesn't allow ${rule} to be performed`
      ) {
        wrongRule.push(`${route} as ${who}: ${JSON.stringify(res.body)} (x-policy ${rule})`);
      }
      expect(res.status).toBeLessThan(500);
    }
  }
  expect(got).toEqual(expected);
  expect(wrongRule).toEqual([]);
  expect(checker.problems).toEqual([]);
}

describe('who may do what, with the default rules', () => {
  let w: World;
  beforeAll(async () => {
    w = await world();
  });
  afterAll(async () => {
    await w?.t.close();
    await w?.db.drop();
  });

  it('should decide every route of the document as the default rules say, for each role and project', async () => {
    const served = (await w.t.http.get('/openapi.json')).body as Record<string, unknown>;
    await matrix(w, DEFAULTS, new OpenApiChecker(served));
  });

  it('should name a rule on every route that needs a token', async () => {
    const served = (await w.t.http.get('/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: unknown[]; 'x-policy'?: string }>>;
    };
    const missing = Object.entries(served.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => op.security === undefined && op['x-policy'] === undefined)
        .map(([m]) => `${m} ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('should give a member counts and windows only from capacity and availability', async () => {
    const as = (path: string) => w.t.http.get(path).set('X-Auth-Token', 'tok-other').expect(200);
    const capacity = await as(
      '/v1/os-hosts/capacity?start=2030-02-01%2000:00&end=2030-02-02%2000:00',
    );
    const availability = await as(
      '/v1/os-hosts/availability?count=3&duration=1h&start=2030-02-01%2000:00',
    );
    const slots = await as(
      '/v1/instances/availability?amount=3&vcpus=1&memory_mb=512&disk_gb=1&affinity=false' +
        '&duration=1h&start=2030-02-01%2000:00',
    );
    for (const text of [capacity.text, availability.text, slots.text]) {
      for (const secret of [w.leaseId, w.reservationId, 'p1-secret-name', 'p1', 'cal-']) {
        expect(text).not.toContain(secret);
      }
    }
    // p1's lease holds one of the two hosts on that day: one is free.
    expect(JSON.stringify(capacity.body)).toMatch(/"reserved":1/);
    // Three hosts for an hour: not before p1's lease ends.
    expect(availability.body.availability[0]).toMatchObject({
      start_date: '2030-02-02T00:00:00.000000',
      free_hosts: 3,
    });
    // Three slots on three hosts, likewise: windows only.
    expect(slots.body.availability[0]).toEqual({
      start_date: '2030-02-02T00:00:00.000000',
      end_date: '2030-02-02T01:00:00.000000',
    });
  });

  it("should show a tenant which hosts its own lease holds, by name, and refuse another project's", async () => {
    const path = `/v1/os-hosts/allocations?lease_id=${w.leaseId}`;
    for (const who of ['member', 'reader'] as const) {
      const res = await w.t.http.get(path).set('X-Auth-Token', `tok-${who}`).expect(200);
      expect(res.body.allocations).toEqual([
        {
          resource_id: expect.any(String),
          hypervisor_hostname: expect.stringMatching(/^cal-/),
          reservations: [
            {
              id: w.reservationId,
              lease_id: w.leaseId,
              start_date: '2030-02-01T00:00:00.000000',
              end_date: '2030-02-02T00:00:00.000000',
            },
          ],
        },
      ]);
    }
    // Instance slots: the host by name and how many slots the lease holds there.
    const slotLease = await w.t.http
      .post('/v1/leases')
      .set('X-Auth-Token', 'tok-member')
      .send({
        name: 'p1-slots',
        start_date: '2030-03-01 00:00',
        end_date: '2030-03-02 00:00',
        reservations: [slotReservation('slots', { amount: 2 })],
      })
      .expect(201);
    const slots = await w.t.http
      .get(`/v1/os-hosts/allocations?lease_id=${slotLease.body.lease.id}`)
      .set('X-Auth-Token', 'tok-reader')
      .expect(200);
    expect(slots.body.allocations).toEqual([
      {
        resource_id: expect.any(String),
        hypervisor_hostname: 'cal-3',
        reservations: [expect.objectContaining({ lease_id: slotLease.body.lease.id, slots: 2 })],
      },
    ]);
    const byReservation = await w.t.http
      .get(`/v1/os-hosts/allocations?reservation_id=${w.reservationId}`)
      .set('X-Auth-Token', 'tok-member')
      .expect(200);
    expect(byReservation.body.allocations).toHaveLength(1);
    for (const query of [
      `lease_id=${w.leaseId}`,
      `lease_id=${randomUUID()}`,
      `reservation_id=${w.reservationId}`,
    ]) {
      const res = await w.t.http
        .get(`/v1/os-hosts/allocations?${query}`)
        .set('X-Auth-Token', 'tok-other')
        .expect(403);
      expect(res.body.error_message).toContain('blazar:oshosts:get_allocations');
    }
    // Both its lease and another's in one query: refused, not narrowed.
    await w.t.http
      .get(`/v1/os-hosts/allocations?lease_id=${w.leaseId}&reservation_id=${randomUUID()}`)
      .set('X-Auth-Token', 'tok-member')
      .expect(403);
  });
});

describe('who may do what, with a policy file that opens the calendar', () => {
  let w: World;
  beforeAll(async () => {
    w = await world(CALENDAR_POLICY);
  });
  afterAll(async () => {
    await w?.t.close();
    await w?.db.drop();
  });

  it('should decide every route as the file says, the other rules as by default', async () => {
    const served = (await w.t.http.get('/openapi.json')).body as Record<string, unknown>;
    await matrix(w, CALENDAR, new OpenApiChecker(served));
  });

  it("should show other projects' allocations as anonymous reserved entries, its own in full", async () => {
    const as = async (who: Who) =>
      (await w.t.http.get('/v1/os-hosts/allocations').set('X-Auth-Token', `tok-${who}`).expect(200))
        .body.allocations as {
        hypervisor_hostname: string;
        reservations: Record<string, unknown>[];
      }[];
    const entries = (list: Awaited<ReturnType<typeof as>>) =>
      list.flatMap((a) => a.reservations.map((r) => ({ host: a.hypervisor_hostname, ...r })));
    const held = expect.stringMatching(/^cal-/);
    const dates = {
      start_date: '2030-02-01T00:00:00.000000',
      end_date: '2030-02-02T00:00:00.000000',
    };
    expect(entries(await as('other'))).toEqual([
      { host: held, id: null, lease_id: null, ...dates },
    ]);
    expect(entries(await as('member'))).toEqual([
      { host: held, id: w.reservationId, lease_id: w.leaseId, ...dates },
    ]);
    expect(entries(await as('admin'))).toEqual([
      { host: held, id: w.reservationId, lease_id: w.leaseId, ...dates },
    ]);
    expect((await as('other')).map((a) => a.hypervisor_hostname).sort()).toEqual([
      'cal-1',
      'cal-2',
      'cal-3',
    ]);
  });
});

describe('a policy file that does not hold together', () => {
  it('should stop the start naming each bad line, with the other settings’ errors', async () => {
    const db = await createTestDatabase();
    const file = join(mkdtempSync(join(tmpdir(), 'policy-')), 'policy.yaml');
    writeFileSync(
      file,
      '"blazar:leases:get": "role:reader or"\n"blazar:leases:post": "rule:owner"\n',
    );
    try {
      await expect(
        startApp({ databaseUrl: db.url, env: { POLICY_FILE: file, PORT: 'x' } }),
      ).rejects.toThrow(
        /PORT=x[\s\S]*policy.yaml:1: blazar:leases:get: "role:reader or" does not parse[\s\S]*policy.yaml:2: blazar:leases:post: rule:owner names no rule/,
      );
    } finally {
      await db.drop();
    }
  });
});
