import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { FakeNeutron } from './support/fake-neutron.js';
import { MemoryDriver } from './support/memory-driver.js';

const ADMIN = { 'X-Project-Id': 'ops', 'X-User-Id': 'ops-u', 'X-Roles': 'admin' };
const A = { 'X-Project-Id': 'proj-a', 'X-User-Id': 'a-u', 'X-Roles': 'member' };
const NET = 'ext-net';

/**
 * virtual:floatingip with COMPUTE_DRIVER=nova: registration checked against Neutron, and
 * the addresses made and removed there, through Climate's real HTTP client against a
 * Neutron in memory (test/support/fake-neutron.ts). Failures and stalls are Neutron's.
 */
describe('virtual:floatingip with Neutron', () => {
  let db: TestDatabase;
  let t: TestApp;
  const neutron = new FakeNeutron();

  beforeAll(async () => {
    await neutron.start();
    neutron.networks.set(NET, {
      subnets: [
        {
          id: 'sub-v4',
          cidr: '10.9.0.0/24',
          gateway_ip: '10.9.0.1',
          allocation_pools: [{ start: '10.9.0.10', end: '10.9.0.99' }],
        },
        {
          id: 'sub-v6',
          cidr: '2001:db8::/64',
          gateway_ip: '2001:db8::1',
          allocation_pools: [{ start: '2001:db8::10', end: '2001:db8::ff' }],
        },
      ],
    });
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      driver: new MemoryDriver(),
      env: { PLUGINS: 'virtual:floatingip', PLUGIN_TIMEOUT_MS: '1000', ...neutron.env() },
    });
    t.clock.set(new Date('2035-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await neutron.stop();
  });

  const register = (address: string, network = NET) =>
    t.http
      .post('/v1/floatingips')
      .set(ADMIN)
      .send({ floating_network_id: network, floating_ip_address: address });

  async function rows(): Promise<number> {
    const client = await connect(db.url);
    try {
      return Number((await client.query(`SELECT count(*) FROM floatingips`)).rows[0].count);
    } finally {
      await client.end();
    }
  }

  it('should register an address only inside a subnet, off its gateway and pools', async () => {
    expect((await register('10.9.0.5').expect(201)).body.floatingip.subnet_id).toBe('sub-v4');
    expect((await register('2001:db8::5').expect(201)).body.floatingip).toMatchObject({
      subnet_id: 'sub-v6',
      floating_ip_address: '2001:db8::5',
    });
    const before = await rows();
    const refusals: [string, string, number, string, RegExp][] = [
      ['10.9.0.1', NET, 400, 'NeutronUsesFloatingIP', /gateway_ip in subnet sub-v4/],
      ['10.9.0.42', NET, 400, 'NeutronUsesFloatingIP', /allocation_pools/],
      ['2001:db8::ff', NET, 400, 'NeutronUsesFloatingIP', /sub-v6/],
      [
        '10.8.0.5',
        NET,
        404,
        'FloatingIPSubnetNotFound',
        /^Valid subnet for the floating IP 10\.8\.0\.5 is not found\.$/,
      ],
      ['10.9.0.6', 'no-such-net', 400, 'NetworkNotFound', /no-such-net/],
    ];
    for (const [address, network, status, name, message] of refusals) {
      const res = await register(address, network);
      expect([address, res.status, res.body.error_type]).toEqual([address, status, name]);
      expect(res.body.error_message).toMatch(message);
    }
    expect(await rows()).toBe(before);
  });

  it('should answer 502 and register nothing when Neutron fails', async () => {
    const before = await rows();
    neutron.failNext.add('GET /v2.0/subnets');
    const res = await register('10.9.0.7').expect(502);
    expect(res.body.error_type).toBe('NetworkServiceError');
    expect(await rows()).toBe(before);
  });

  it('should make the addresses floating IPs of the project at the start and delete them at the end', async () => {
    const made = await t.http
      .post('/v1/leases')
      .set(A)
      .send({
        name: 'fips',
        start_date: '2035-01-02 00:00',
        end_date: '2035-01-03 00:00',
        reservations: [{ resource_type: 'virtual:floatingip', network_id: NET, amount: 2 }],
      })
      .expect(201);
    const id = made.body.lease.id as string;
    const rid = made.body.lease.reservations[0].id as string;
    expect(made.body.lease.reservations[0].floatingips).toEqual(['10.9.0.5', '2001:db8::5']);
    expect(neutron.floatingips.size).toBe(0);

    // The first try fails in Neutron: the event is retried, with the reason shown.
    neutron.failNext.add('POST /v2.0/floatingips');
    t.clock.set(new Date('2035-01-02T00:00:00Z'));
    await t.settle();
    const failed = (await t.http.get(`/v1/leases/${id}`).set(A)).body.lease;
    const start = failed.events.find((e: { event_type: string }) => e.event_type === 'start_lease');
    expect([failed.status, start.status]).toEqual(['PENDING', 'UNDONE']);
    expect(start.last_error).toMatch(/Neutron POST \/v2\.0\/floatingips answered 500/);

    t.clock.advance(60_000);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`).set(A)).body.lease.status).toBe('ACTIVE');
    const fips = [...neutron.floatingips.values()];
    expect(fips.map((f) => f.floating_ip_address).sort()).toEqual(['10.9.0.5', '2001:db8::5']);
    for (const f of fips) {
      expect(f).toMatchObject({ project_id: 'proj-a', floating_network_id: NET });
      expect(f.tags.sort()).toEqual(['blazar', `reservation:${rid}`]);
    }
    // One more address while it runs: the manager makes it in Neutron within a poll.
    await register('10.9.0.9').expect(201);
    await t.http
      .put(`/v1/leases/${id}`)
      .set(A)
      .send({ reservations: [{ id: rid, amount: 3 }] })
      .expect(200);
    await t.settle();
    expect([...neutron.floatingips.values()].map((f) => f.floating_ip_address).sort()).toEqual([
      '10.9.0.5',
      '10.9.0.9',
      '2001:db8::5',
    ]);
    const added = [...neutron.floatingips.values()].find(
      (f) => f.floating_ip_address === '10.9.0.9',
    );
    neutron.floatingips.delete(added?.id ?? '');
    // The tenant associates one with a port, and deletes the other itself.
    fips[0].port_id = 'port-1';
    neutron.floatingips.delete(fips[1].id);
    neutron.calls.length = 0;

    t.clock.set(new Date('2035-01-03T00:00:00Z'));
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`).set(A)).body.lease.status).toBe('TERMINATED');
    expect(neutron.floatingips.size).toBe(0);
    const writes = neutron.calls.filter((c) => !c.startsWith('GET'));
    expect(writes).toEqual([
      `PUT /v2.0/floatingips/${fips[0].id}`,
      `DELETE /v2.0/floatingips/${fips[0].id}`,
    ]);
  });

  it('should time out a stalled Neutron as every plugin action, and retry the event', async () => {
    await register('10.9.0.8', NET).expect(201);
    const made = await t.http
      .post('/v1/leases')
      .set(A)
      .send({
        name: 'stall',
        start_date: '2035-02-01 00:00',
        end_date: '2035-02-02 00:00',
        reservations: [
          {
            resource_type: 'virtual:floatingip',
            network_id: NET,
            amount: 1,
            required_floatingips: ['10.9.0.8'],
          },
        ],
      })
      .expect(201);
    neutron.stall = 'POST /v2.0/floatingips';
    t.clock.set(new Date('2035-02-01T00:00:00Z'));
    await t.manager.tick();
    // Past PLUGIN_TIMEOUT_MS the attempt has failed; it is recorded once the call ends.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    neutron.release();
    await t.manager.drain();
    const lease = (await t.http.get(`/v1/leases/${made.body.lease.id}`).set(A)).body.lease;
    const start = lease.events.find((e: { event_type: string }) => e.event_type === 'start_lease');
    expect([lease.status, start.status]).toEqual(['PENDING', 'UNDONE']);
    expect(start.last_error).toMatch(/timed out after 1000 ms/);
    t.clock.advance(60_000);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${made.body.lease.id}`).set(A)).body.lease.status).toBe(
      'ACTIVE',
    );
    expect([...neutron.floatingips.values()].map((f) => f.floating_ip_address)).toEqual([
      '10.9.0.8',
    ]);
  });
});
