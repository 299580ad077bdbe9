/**
 * virtual:floatingip against the real Neutron of ../shared/openstack, brought up with
 * NEUTRON_L3=1: an external network `public` with subnet 203.0.113.0/24 (gateway .1,
 * allocation pool .10-.199). Run with `NEUTRON_L3=1 npm run test:openstack`.
 */
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { startApp, TestApp } from '../support/app.js';
import { createTestDatabase, TestDatabase } from '../support/database.js';
import { KS, NOVA, tenant, token, type Tenant } from './support.js';
import { blazarCli } from '../support/blazar-cli.js';

jest.setTimeout(180_000);

const NEUTRON = process.env.OS_NEUTRON_URL ?? 'http://127.0.0.1:9696';
const HOUR = 3600_000;

async function neutron(
  tokenValue: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${NEUTRON}${path}`, {
    method,
    headers: { 'X-Auth-Token': tokenValue, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : JSON.parse(text) };
}

interface Fip {
  id: string;
  floating_ip_address: string;
  project_id: string;
  tags: string[];
}

describe('virtual:floatingip on the real Neutron', () => {
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
  let user: Tenant;
  let network: string;
  let subnet: string;
  const registered: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = (await token('admin', 'adminpass', 'admin')).token;
    user = await tenant(admin, 'climate-fip');
    const nets = (await neutron(admin, 'GET', '/v2.0/networks?name=public')).body.networks as {
      id: string;
      subnets: string[];
    }[];
    if (nets[0] === undefined) throw new Error('no network public: start with NEUTRON_L3=1');
    [network, subnet] = [nets[0].id, nets[0].subnets[0]];
    // Left over from an earlier run that stopped half-way.
    const old = (await neutron(admin, 'GET', '/v2.0/floatingips?tags=blazar')).body
      .floatingips as Fip[];
    for (const f of old) await neutron(admin, 'DELETE', `/v2.0/floatingips/${f.id}`);
    t = await startApp({
      databaseUrl: db.url,
      env: {
        PLUGINS: 'virtual:floatingip',
        AUTH_STRATEGY: 'keystone',
        COMPUTE_DRIVER: 'nova',
        KEYSTONE_URL: KS,
        NOVA_URL: NOVA,
        SERVICE_USERNAME: 'admin',
        SERVICE_PASSWORD: 'adminpass',
        SERVICE_PROJECT: 'admin',
      },
    });
    t.clock.set(new Date());
    http = request(t.app.getHttpServer());
  });
  afterAll(async () => {
    for (const id of registered) {
      await http?.delete(`/v1/floatingips/${id}`).set('X-Auth-Token', admin);
    }
    await t?.close();
    await db?.drop();
  });

  const register = (address: string, net = network) =>
    http
      .post('/v1/floatingips')
      .set('X-Auth-Token', admin)
      .send({ floating_network_id: net, floating_ip_address: address });

  /** Floating IPs Neutron has for a reservation, as an admin sees them. */
  const inNeutron = async (reservationId: string) =>
    (await neutron(admin, 'GET', `/v2.0/floatingips?tags=reservation:${reservationId}`)).body
      .floatingips as Fip[];

  it('should register only addresses of a subnet that Neutron never hands out itself', async () => {
    for (const address of ['203.0.113.2', '203.0.113.3']) {
      const res = await register(address).expect(201);
      expect(res.body.floatingip).toMatchObject({
        floating_network_id: network,
        subnet_id: subnet,
        floating_ip_address: address,
        reservable: true,
      });
      registered.push(res.body.floatingip.id);
    }
    const refusals: [string, string, number, string][] = [
      ['203.0.113.1', network, 400, 'NeutronUsesFloatingIP'],
      ['203.0.113.50', network, 400, 'NeutronUsesFloatingIP'],
      ['198.51.100.7', network, 404, 'FloatingIPSubnetNotFound'],
      ['203.0.113.4', '00000000-0000-4000-8000-000000000000', 400, 'NetworkNotFound'],
    ];
    for (const [address, net, status, name] of refusals) {
      const res = await register(address, net);
      expect([address, res.status, res.body.error_type]).toEqual([address, status, name]);
    }
    const list = (await http.get('/v1/floatingips').set('X-Auth-Token', admin).expect(200)).body;
    expect(list.floatingips).toHaveLength(2);
    await http.post('/v1/floatingips').set('X-Auth-Token', user.token).send({}).expect(403);
  });

  it('should make the reserved addresses floating IPs of the project while the lease runs', async () => {
    const end = new Date(t.clock.now().getTime() + HOUR);
    const lease = async (name: string, amount: number, until = end) =>
      http
        .post('/v1/leases')
        .set('X-Auth-Token', user.token)
        .send({
          name,
          start_date: 'now',
          end_date: until.toISOString(),
          reservations: [{ resource_type: 'virtual:floatingip', network_id: network, amount }],
        });
    const made = await lease('fip-two', 2);
    expect(made.status).toBe(201);
    const id = made.body.lease.id as string;
    const rid = made.body.lease.reservations[0].id as string;
    // Both held: a third lease finds none.
    const third = await lease('fip-third', 1);
    expect([third.status, third.body.error_type]).toEqual([409, 'NotEnoughFloatingIPAvailable']);

    await t.settle();
    const shown = (await http.get(`/v1/leases/${id}`).set('X-Auth-Token', user.token)).body.lease;
    expect([shown.status, shown.reservations[0].status]).toEqual(['ACTIVE', 'active']);
    const fips = await inNeutron(rid);
    expect(fips.map((f) => f.floating_ip_address).sort()).toEqual(['203.0.113.2', '203.0.113.3']);
    for (const f of fips) {
      expect(f.project_id).toBe(user.projectId);
      expect(f.tags.sort()).toEqual(['blazar', `reservation:${rid}`].sort());
    }
    // The tenant sees them in its own project.
    const held = await lease('fip-third-active', 1);
    expect([held.status, held.body.error_type]).toEqual([409, 'NotEnoughFloatingIPAvailable']);
    const own = (await neutron(user.token, 'GET', '/v2.0/floatingips')).body.floatingips as Fip[];
    expect(own.map((f) => f.id).sort()).toEqual(fips.map((f) => f.id).sort());
    // The tenant deletes one itself before the end: the end takes that as done.
    await neutron(user.token, 'DELETE', `/v2.0/floatingips/${fips[0].id}`);

    t.clock.set(end);
    await t.settle();
    const ended = (await http.get(`/v1/leases/${id}`).set('X-Auth-Token', user.token)).body.lease;
    expect(ended.status).toBe('TERMINATED');
    expect(await inNeutron(rid)).toEqual([]);
    // Free again.
    const again = await lease('fip-after', 2, new Date(end.getTime() + HOUR));
    expect(again.status).toBe(201);
    await http.delete(`/v1/leases/${again.body.lease.id}`).set('X-Auth-Token', user.token);
  });
  it('should take the floating-IP commands of both CLIs with Keystone tokens, checked by Neutron', async () => {
    await t.app.listen(0, '127.0.0.1');
    const { port } = (t.app.getHttpServer() as { address(): AddressInfo }).address();
    const endpoint = `http://127.0.0.1:${port}/v1`;
    const cli = async (tokenValue: string, program: 'blazar' | 'openstack', ...args: string[]) => {
      const r = await blazarCli(program, endpoint, args, tokenValue);
      return { code: r.code, out: r.code === 0 ? r.stdout : r.out };
    };
    const json = (out: string) =>
      JSON.parse(out.slice(out.search(/^[[{]/m))) as Record<string, string>;
    const made = await cli(
      admin,
      'blazar',
      'floatingip-create',
      '-f',
      'json',
      network,
      '203.0.113.4',
    );
    expect(made.code).toBe(0);
    const fip = json(made.out);
    expect(fip).toMatchObject({ floating_ip_address: '203.0.113.4', subnet_id: subnet });
    registered.push(fip.id);
    const gateway = await cli(
      admin,
      'openstack',
      'reservation',
      'floatingip',
      'create',
      network,
      '203.0.113.1',
    );
    expect(gateway.code).not.toBe(0);
    expect(gateway.out).toContain('is used in allocation_pools or gateway_ip');
    const shown = await cli(
      admin,
      'openstack',
      'reservation',
      'floatingip',
      'show',
      '-f',
      'json',
      fip.id,
    );
    expect(json(shown.out).id).toBe(fip.id);
    const listed = await cli(admin, 'blazar', 'floatingip-list', '-f', 'json');
    expect(listed.out).toContain(fip.id);
    // A tenant is no admin: registering is refused, with Blazar's rule in the message.
    const denied = await cli(user.token, 'blazar', 'floatingip-create', network, '203.0.113.5');
    expect(denied.out).toContain("Policy doesn't allow blazar:floatingips:post to be performed");

    // The tenant reserves it through the OpenStack client; the start makes it in Neutron.
    const end = new Date(t.clock.now().getTime() + 3 * HOUR)
      .toISOString()
      .slice(0, 16)
      .replace('T', ' ');
    const lease = await cli(
      user.token,
      'openstack',
      'reservation',
      'lease',
      'create',
      '-f',
      'json',
      '--start-date',
      'now',
      '--end-date',
      end,
      '--reservation',
      `resource_type=virtual:floatingip,network_id=${network},amount=1,required_floatingips=["203.0.113.4"]`,
      'fip-cli',
    );
    expect(lease.code).toBe(0);
    const leaseId = json(lease.out).id;
    await t.settle();
    const shownLease = (await http.get(`/v1/leases/${leaseId}`).set('X-Auth-Token', user.token))
      .body.lease;
    expect(shownLease.status).toBe('ACTIVE');
    const fips = await inNeutron(shownLease.reservations[0].id as string);
    expect(fips.map((f) => [f.floating_ip_address, f.project_id])).toEqual([
      ['203.0.113.4', user.projectId],
    ]);
    const busy = await cli(admin, 'blazar', 'floatingip-delete', fip.id);
    expect(busy.out).toContain('allocated to a current or future reservation');
    expect((await cli(user.token, 'blazar', 'lease-delete', leaseId)).code).toBe(0);
    await t.settle();
    expect(await inNeutron(shownLease.reservations[0].id as string)).toEqual([]);
    expect(
      (await cli(admin, 'openstack', 'reservation', 'floatingip', 'delete', fip.id)).code,
    ).toBe(0);
    registered.splice(registered.indexOf(fip.id), 1);
  });
});
