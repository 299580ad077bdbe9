import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const as = (project: string, roles = 'member') => ({
  'X-Project-Id': project,
  'X-User-Id': `${project}-u`,
  'X-Roles': roles,
});
const ADMIN = as('ops', 'admin');
const A = as('proj-a');
const B = as('proj-b');
const NET = 'net-public';

/** virtual:floatingip with the builtin driver: addresses are booked, Neutron is not asked. */
describe('virtual:floatingip, booked (COMPUTE_DRIVER=builtin)', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'virtual:floatingip' } });
    t.clock.set(new Date('2033-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function count(table: string): Promise<number> {
    const client = await connect(db.url);
    try {
      return Number((await client.query(`SELECT count(*) FROM ${table}`)).rows[0].count);
    } finally {
      await client.end();
    }
  }
  const counts = async () =>
    Promise.all(['floatingips', 'floatingip_allocations', 'leases', 'reservations'].map(count));

  const register = (address: string, network = NET) =>
    t.http
      .post('/v1/floatingips')
      .set(ADMIN)
      .send({ floating_network_id: network, floating_ip_address: address });

  const lease = (
    name: string,
    start: string,
    end: string,
    values: Record<string, unknown>,
    who = A,
  ) =>
    t.http
      .post('/v1/leases')
      .set(who)
      .send({
        name,
        start_date: start,
        end_date: end,
        reservations: [{ resource_type: 'virtual:floatingip', network_id: NET, ...values }],
      });

  it('should register, list, show and delete addresses with Blazar fields and envelopes', async () => {
    const made = await register('198.51.100.5').expect(201);
    expect(made.body.floatingip).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      floating_network_id: NET,
      subnet_id: null,
      floating_ip_address: '198.51.100.5',
      reservable: true,
      created_at: '2033-01-01 00:00:00',
      updated_at: null,
    });
    const id = made.body.floatingip.id;
    const list = await t.http.get('/v1/floatingips').set(A).expect(200);
    expect(list.body.floatingips.map((f: { id: string }) => f.id)).toContain(id);
    expect((await t.http.get(`/v1/floatingips/${id}`).set(A).expect(200)).body.floatingip.id).toBe(
      id,
    );
    await t.http.delete(`/v1/floatingips/${id}`).set(ADMIN).expect(204);
    const gone = await t.http.get(`/v1/floatingips/${id}`).set(ADMIN).expect(404);
    expect(gone.body).toEqual({
      error_code: 404,
      error_message: `Object with {'floatingip_id': '${id}'} not found`,
      error_name: 404,
      error_type: 'NotFound',
    });
    await t.http.get('/v1/floatingips/not-a-uuid').set(ADMIN).expect(404);
  });

  it('should refuse bad registrations and non-admins with a 4xx that changes nothing', async () => {
    await register('198.51.100.6').expect(201);
    const before = await counts();
    const cases: [Record<string, unknown>, Record<string, string>, number, string][] = [
      [{ floating_network_id: NET }, ADMIN, 400, 'MissingParameter'],
      [{ floating_ip_address: '198.51.100.7' }, ADMIN, 400, 'MissingParameter'],
      [
        { floating_network_id: NET, floating_ip_address: '198.51.100.300' },
        ADMIN,
        400,
        'InvalidIPFormat',
      ],
      [
        { floating_network_id: NET, floating_ip_address: 'fe80::1%eth0' },
        ADMIN,
        400,
        'InvalidIPFormat',
      ],
      [
        { floating_network_id: 7, floating_ip_address: '198.51.100.7' },
        ADMIN,
        400,
        'MalformedParameter',
      ],
      [
        { floating_network_id: NET, floating_ip_address: '198.51.100.7', x: 1 },
        ADMIN,
        400,
        'InvalidInput',
      ],
      [
        { floating_network_id: NET, floating_ip_address: '198.51.100.6' },
        ADMIN,
        409,
        'FloatingIPAlreadyExists',
      ],
      [
        { floating_network_id: NET, floating_ip_address: '198.51.100.7' },
        A,
        403,
        'PolicyNotAuthorized',
      ],
    ];
    for (const [body, who, status, name] of cases) {
      const res = await t.http.post('/v1/floatingips').set(who).send(body);
      expect([res.status, res.body.error_type]).toEqual([status, name]);
      expect(res.body.error_code).toBe(status);
    }
    for (const body of [[], [{ floating_network_id: NET, floating_ip_address: '192.0.2.9' }]]) {
      const res = await t.http.post('/v1/floatingips').set(ADMIN).send(body);
      expect([res.status, res.body.error_code]).toEqual([400, 400]);
    }
    const [first] = (await t.http.get('/v1/floatingips').set(ADMIN)).body.floatingips;
    const denied = await t.http.delete(`/v1/floatingips/${first.id}`).set(A).expect(403);
    expect(denied.body.error_message).toBe(
      "Policy doesn't allow blazar:floatingips:delete to be performed",
    );
    expect(await counts()).toEqual(before);
  });

  it('should reserve addresses over time and refuse an overlap with 409', async () => {
    const net = { network_id: 'net-over' };
    for (const a of ['203.0.113.20', '203.0.113.21', '203.0.113.22']) await register(a, 'net-over');
    const first = await lease('two', '2033-02-01 00:00', '2033-02-02 00:00', {
      ...net,
      amount: 2,
    }).expect(201);
    const r = first.body.lease.reservations[0];
    expect(r).toMatchObject({
      resource_type: 'virtual:floatingip',
      network_id: 'net-over',
      amount: 2,
      required_floatingips: [],
      status: 'pending',
    });
    expect(r.floatingips).toEqual(['203.0.113.20', '203.0.113.21']);
    const shown = (await t.http.get(`/v1/leases/${first.body.lease.id}`).set(A)).body.lease;
    expect(shown.reservations[0].floatingips).toEqual(r.floatingips);
    const before = await counts();
    const refused = await lease('two-more', '2033-02-01 12:00', '2033-02-03 00:00', {
      ...net,
      amount: 2,
    }).expect(409);
    expect(refused.body.error_type).toBe('NotEnoughFloatingIPAvailable');
    expect(refused.body.error_message).toMatch(/^Not enough floating IPs available/);
    expect(await counts()).toEqual(before);
    // One more fits beside it; and two again once the first window is over.
    await lease('one', '2033-02-01 12:00', '2033-02-03 00:00', { ...net, amount: 1 }).expect(201);
    await lease('later', '2033-02-03 00:00', '2033-02-04 00:00', { ...net, amount: 2 }).expect(201);
  });

  it('should hold required addresses and refuse unknown or busy ones', async () => {
    await register('203.0.113.30');
    await register('203.0.113.31');
    const window = ['2033-03-01 00:00', '2033-03-02 00:00'] as const;
    const held = await lease('req', ...window, {
      amount: 1,
      required_floatingips: ['203.0.113.31'],
    }).expect(201);
    expect(held.body.lease.reservations[0].floatingips).toEqual(['203.0.113.31']);
    const before = await counts();
    const busy = await lease('req-busy', ...window, {
      amount: 1,
      required_floatingips: ['203.0.113.31'],
    }).expect(409);
    expect(busy.body.error_type).toBe('NotEnoughFloatingIPAvailable');
    const unknown = await lease('req-unknown', ...window, {
      amount: 1,
      required_floatingips: ['203.0.113.99'],
    }).expect(400);
    expect(unknown.body.error_message).toMatch(/203\.0\.113\.99/);
    const bad: Record<string, unknown>[] = [
      { amount: 1, required_floatingips: ['203.0.113.30', '203.0.113.31'] },
      { amount: 0 },
      { amount: 'two' },
      { amount: 1, required_floatingips: 'x' },
      { amount: 1, required_floatingips: ['nope'] },
      { amount: 1, network_id: null },
      { amount: 1, colour: 'red' },
    ];
    for (const values of bad) await lease('bad', ...window, values).expect(400);
    expect(await counts()).toEqual(before);
  });

  it("should keep another project's lease and its addresses out of sight", async () => {
    await register('203.0.113.40');
    const mine = await lease('mine', '2033-04-01 00:00', '2033-04-02 00:00', {
      amount: 1,
      network_id: 'net-b',
    }).expect(409);
    expect(mine.body.error_type).toBe('NotEnoughFloatingIPAvailable');
    await register('203.0.113.41', 'net-b');
    const own = await lease('mine', '2033-04-01 00:00', '2033-04-02 00:00', {
      amount: 1,
      network_id: 'net-b',
    }).expect(201);
    const id = own.body.lease.id;
    await t.http.get(`/v1/leases/${id}`).set(B).expect(404);
    const theirs = (await t.http.get('/v1/leases').set(B).expect(200)).body.leases;
    expect(theirs.map((l: { id: string }) => l.id)).not.toContain(id);
    await t.http.delete(`/v1/leases/${id}`).set(B).expect(404);
    expect((await t.http.get(`/v1/leases/${id}`).set(A).expect(200)).body.lease.id).toBe(id);
  });

  it('should update amount and required_floatingips as Blazar allows, never network_id', async () => {
    const addresses = ['203.0.113.50', '203.0.113.51', '203.0.113.52'];
    for (const a of addresses) await register(a, 'net-u');
    const made = await lease('upd', '2033-05-01 00:00', '2033-05-02 00:00', {
      network_id: 'net-u',
      amount: 1,
      required_floatingips: ['203.0.113.52'],
    }).expect(201);
    const { id } = made.body.lease;
    const rid = made.body.lease.reservations[0].id;
    const put = (values: Record<string, unknown>) =>
      t.http
        .put(`/v1/leases/${id}`)
        .set(A)
        .send({ reservations: [{ id: rid, ...values }] });
    const grown = await put({ amount: 3 }).expect(200);
    expect(grown.body.lease.reservations[0].floatingips.sort()).toEqual(addresses);
    await put({ amount: 2 }).expect(200);
    expect((await put({ network_id: 'net-b' }).expect(400)).body.error_type).toBe(
      'CantUpdateFloatingIPReservation',
    );
    await put({ required_floatingips: ['203.0.113.50'] }).expect(400);
    const cleared = await put({ required_floatingips: [] }).expect(200);
    expect(cleared.body.lease.reservations[0].required_floatingips).toEqual([]);
    // Started: the amount only grows.
    t.clock.set(new Date('2033-05-01T00:00:00Z'));
    await t.settle();
    const shown = (await t.http.get(`/v1/leases/${id}`).set(A)).body.lease;
    expect([shown.status, shown.reservations[0].status]).toEqual(['ACTIVE', 'active']);
    await put({ amount: 1 }).expect(400);
    await put({ amount: 3 }).expect(200);
    const after = (await t.http.get(`/v1/leases/${id}`).set(A)).body.lease.reservations[0];
    expect(after.floatingips.sort()).toEqual(addresses);
    // Held now: the address cannot be deleted; once the lease ends it can.
    const [f] = (await t.http.get('/v1/floatingips').set(ADMIN)).body.floatingips.filter(
      (x: { floating_ip_address: string }) => x.floating_ip_address === '203.0.113.50',
    );
    const refused = await t.http.delete(`/v1/floatingips/${f.id}`).set(ADMIN).expect(409);
    expect(refused.body.error_type).toBe('CantDeleteFloatingIP');
    t.clock.set(new Date('2033-05-02T00:00:00Z'));
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`).set(A)).body.lease.status).toBe('TERMINATED');
    await t.http.delete(`/v1/floatingips/${f.id}`).set(ADMIN).expect(204);
  });
});

describe('virtual:floatingip not enabled', () => {
  it('should answer 404 on /v1/floatingips when PLUGINS leaves the type out, as Blazar', async () => {
    const db = await createTestDatabase();
    const t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
    try {
      const res = await t.http.get('/v1/floatingips').set(ADMIN).expect(404);
      expect(res.body.error_message).toBe(
        'The virtual:floatingip resource type is not enabled (PLUGINS)',
      );
      await t.http
        .post('/v1/floatingips')
        .set(ADMIN)
        .send({ floating_network_id: NET, floating_ip_address: '192.0.2.1' })
        .expect(404);
      const lease = await t.http
        .post('/v1/leases')
        .set(A)
        .send({
          name: 'off',
          start_date: '2031-01-01 00:00',
          end_date: '2031-01-02 00:00',
          reservations: [{ resource_type: 'virtual:floatingip', network_id: NET, amount: 1 }],
        })
        .expect(400);
      expect(lease.body.error_type).toBe('UnsupportedResourceType');
    } finally {
      await t.close();
      await db.drop();
    }
  });
});

describe('virtual:floatingip and the external enforcement service', () => {
  it("should send the floating IPs a reservation holds as its allocations, as Blazar's filters get them", async () => {
    const bodies: { path: string; body: Record<string, unknown> }[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        bodies.push({ path: req.url ?? '', body: JSON.parse(text) as Record<string, unknown> });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const db = await createTestDatabase();
    const t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'virtual:floatingip', EXTERNAL_SERVICE_URL: `http://127.0.0.1:${port}/` },
    });
    try {
      t.clock.set(new Date('2036-01-01T00:00:00Z'));
      const made = await t.http
        .post('/v1/floatingips')
        .set(ADMIN)
        .send({ floating_network_id: NET, floating_ip_address: '192.0.2.77' })
        .expect(201);
      const lease = await t.http
        .post('/v1/leases')
        .set(A)
        .send({
          name: 'enforced',
          start_date: '2036-01-02 00:00',
          end_date: '2036-01-03 00:00',
          reservations: [{ resource_type: 'virtual:floatingip', network_id: NET, amount: 1 }],
        })
        .expect(201);
      await t.http.delete(`/v1/leases/${lease.body.lease.id}`).set(A).expect(204);
      const sent = (path: string) => {
        const call = bodies.find((b) => b.path.endsWith(path));
        const body = call?.body.lease as { reservations: { allocations: unknown[] }[] };
        return body.reservations[0].allocations;
      };
      expect(sent('check-create')).toEqual([made.body.floatingip]);
      expect(sent('on-end')).toEqual([made.body.floatingip]);
    } finally {
      await t.close();
      await db.drop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('virtual:floatingip, concurrent creates', () => {
  let db: TestDatabase;
  let apps: TestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { PLUGINS: 'virtual:floatingip' };
    const first = await startApp({ databaseUrl: db.url, env });
    // Three API replicas, each with its own connection pool, on one database.
    apps = [
      first,
      await startApp({ databaseUrl: db.url, env, clock: first.clock }),
      await startApp({ databaseUrl: db.url, env, clock: first.clock }),
    ];
    first.clock.set(new Date('2034-01-01T00:00:00Z'));
    for (let i = 1; i <= 6; i++) {
      await first.http
        .post('/v1/floatingips')
        .set(ADMIN)
        .send({ floating_network_id: NET, floating_ip_address: `192.0.2.${i}` })
        .expect(201);
    }
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });

  it('should grant exactly the addresses there are when 30 creates race for one window', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        apps[i % apps.length].http
          .post('/v1/leases')
          .set(A)
          .send({
            name: `race-${i}`,
            start_date: '2034-01-02 00:00',
            end_date: '2034-01-03 00:00',
            reservations: [
              { resource_type: 'virtual:floatingip', network_id: NET, amount: (i % 2) + 1 },
            ],
          }),
      ),
    );
    const granted = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409);
    expect(granted.length + refused.length).toBe(30);
    for (const r of refused) expect(r.body.error_type).toBe('NotEnoughFloatingIPAvailable');
    const held = granted.flatMap((r) => r.body.lease.reservations[0].floatingips as string[]);
    expect(new Set(held).size).toBe(held.length);
    // As many as fit: at most the six addresses, and never two or more left unused.
    expect(held.length).toBeLessThanOrEqual(6);
    expect(held.length).toBeGreaterThanOrEqual(5);
    const client = await connect(db.url);
    try {
      const overlaps = await client.query(
        `SELECT count(*) FROM floatingip_allocations a JOIN floatingip_allocations b
           ON a.floatingip_id = b.floatingip_id AND a.id < b.id AND a.during && b.during`,
      );
      expect(Number(overlaps.rows[0].count)).toBe(0);
      const rows = await client.query(`SELECT count(*) FROM floatingip_allocations`);
      expect(Number(rows.rows[0].count)).toBe(held.length);
      // The database itself refuses a double booking, whatever the application does.
      await expect(
        client.query(
          `INSERT INTO floatingip_allocations (id, reservation_id, floatingip_id, during)
           SELECT uuid7(), reservation_id, floatingip_id, during FROM floatingip_allocations LIMIT 1`,
        ),
      ).rejects.toThrow(/floatingip_allocations_no_overlap/);
    } finally {
      await client.end();
    }
  });
});
