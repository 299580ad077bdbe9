/**
 * Climate against a real Keystone and Nova (fake compute hosts), as brought up by
 * ../shared/openstack/bringup.sh. Run with `npm run test:openstack`.
 */
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { connect, createTestDatabase, TestDatabase } from '../support/database.js';
import { PoolsMaintenance } from '../../src/pools/pools-maintenance.js';
import { startApp, TestApp } from '../support/app.js';
import { KeystoneClient } from '../../src/compute/keystone.client.js';
import { NovaDriver } from '../../src/compute/nova.driver.js';

jest.setTimeout(180_000);

const KS = process.env.OS_KEYSTONE_URL ?? 'http://127.0.0.1:5000/v3';
const NOVA = process.env.OS_NOVA_URL ?? 'http://127.0.0.1:8774/v2.1';

async function token(
  user: string,
  password: string,
  project: string,
): Promise<{ token: string; projectId: string }> {
  const res = await fetch(`${KS}/auth/tokens`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { name: user, domain: { id: 'default' }, password } },
        },
        scope: { project: { name: project, domain: { id: 'default' } } },
      },
    }),
  });
  if (!res.ok) throw new Error(`keystone ${res.status}`);
  const body = (await res.json()) as { token: { project: { id: string } } };
  return { token: res.headers.get('x-subject-token') as string, projectId: body.token.project.id };
}

async function keystone(
  adminToken: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${KS}${path}`, {
    method,
    headers: { 'X-Auth-Token': adminToken, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** A project with a member user, created once (reused when it exists). */
async function tenant(
  adminToken: string,
  name: string,
): Promise<{ token: string; projectId: string }> {
  const projects = (await keystone(adminToken, 'GET', `/projects?name=${name}`)).projects as {
    id: string;
  }[];
  const projectId =
    projects[0]?.id ??
    (
      (await keystone(adminToken, 'POST', '/projects', { project: { name, domain_id: 'default' } }))
        .project as { id: string }
    ).id;
  const users = (await keystone(adminToken, 'GET', `/users?name=${name}-user`)).users as {
    id: string;
  }[];
  const userId =
    users[0]?.id ??
    (
      (
        await keystone(adminToken, 'POST', '/users', {
          user: { name: `${name}-user`, password: 'pw', domain_id: 'default' },
        })
      ).user as { id: string }
    ).id;
  const roles = (await keystone(adminToken, 'GET', '/roles?name=member')).roles as { id: string }[];
  await keystone(adminToken, 'PUT', `/projects/${projectId}/users/${userId}/roles/${roles[0].id}`);
  return token(`${name}-user`, 'pw', name);
}

async function nova(adminToken: string, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${NOVA}${path}`, {
    headers: { 'X-Auth-Token': adminToken, 'X-OpenStack-Nova-API-Version': '2.79' },
  });
  return (await res.json()) as Record<string, unknown>;
}

async function novaAs(
  tokenValue: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${NOVA}${path}`, {
    method,
    headers: {
      'X-Auth-Token': tokenValue,
      'X-OpenStack-Nova-API-Version': '2.79',
      'Content-Type': 'application/json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** Boots a server without networks and waits until it is ACTIVE or ERROR; returns its host. */
async function boot(
  tokenValue: string,
  adminToken: string,
  name: string,
  flavor: string,
  zone?: string,
  hints?: Record<string, string>,
): Promise<{ id: string; status: string; host: string | null }> {
  const images = await fetch('http://127.0.0.1:9292/v2/images?name=tiny', {
    headers: { 'X-Auth-Token': adminToken },
  });
  const image = ((await images.json()) as { images: { id: string }[] }).images[0].id;
  const made = (await novaAs(tokenValue, 'POST', '/servers', {
    server: {
      name,
      imageRef: image,
      flavorRef: flavor,
      networks: 'none',
      ...(zone ? { availability_zone: zone } : {}),
    },
    ...(hints ? { 'os:scheduler_hints': hints } : {}),
  })) as {
    server?: { id: string };
  };
  if (made.server === undefined) throw new Error(`boot refused: ${JSON.stringify(made)}`);
  for (let i = 0; i < 90; i++) {
    const s = (
      (await novaAs(adminToken, 'GET', `/servers/${made.server.id}`)) as {
        server: Record<string, unknown>;
      }
    ).server;
    if (s.status === 'ACTIVE' || s.status === 'ERROR') {
      return {
        id: made.server.id,
        status: s.status,
        host: (s['OS-EXT-SRV-ATTR:host'] as string | null) ?? null,
      };
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error('server did not settle');
}

async function gone(adminToken: string, id: string): Promise<boolean> {
  for (let i = 0; i < 60; i++) {
    const res = await fetch(`${NOVA}/servers/${id}`, { headers: { 'X-Auth-Token': adminToken } });
    await res.text();
    if (res.status === 404) return true;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return false;
}

/** The real driver, with one-shot failures to arm: a crash half-way through an action. */
class FlakyNova extends NovaDriver {
  readonly failNext = new Set<string>();
  private trip(method: string): void {
    if (this.failNext.delete(method)) throw new Error(`injected failure in ${method}`);
  }
  override async grantFlavorAccess(id: string, projectId: string): Promise<void> {
    this.trip('grantFlavorAccess');
    return super.grantFlavorAccess(id, projectId);
  }
  override async addHost(pool: string, host: string): Promise<void> {
    if (pool !== 'freepool' && host === 'fake-3') this.trip('addHost');
    return super.addHost(pool, host);
  }
}

describe('Climate on Keystone and Nova', () => {
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
  let alice: { token: string; projectId: string };
  let bob: { token: string; projectId: string };
  const driver = new FlakyNova(
    new KeystoneClient({
      url: KS,
      username: 'admin',
      password: 'adminpass',
      project: 'admin',
      domain: 'Default',
    }),
    NOVA,
  );

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = (await token('admin', 'adminpass', 'admin')).token;
    alice = await tenant(admin, 'climate-alice');
    bob = await tenant(admin, 'climate-bob');
    // a public flavor for plain boots (409 when it is there already)
    await novaAs(admin, 'POST', '/flavors', {
      flavor: { id: 'climate-small', name: 'climate-small', ram: 256, vcpus: 1, disk: 1 },
    });
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: {
        PLUGINS: 'physical:host,virtual:instance',
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
    await t?.close();
    await db?.drop();
  });

  /** One reservation for alice, starting now for an hour. */
  const aliceLease = (name: string, reservation: Record<string, unknown>) =>
    http
      .post('/v1/leases')
      .set('X-Auth-Token', alice.token)
      .send({
        name,
        start_date: 'now',
        end_date: new Date(t.clock.now().getTime() + 3600_000).toISOString(),
        reservations: [reservation],
      })
      .expect(201);

  /** An instance reservation of small slots, anywhere. */
  const smallSlots = (values: Record<string, unknown>) => ({
    resource_type: 'virtual:instance',
    vcpus: 1,
    memory_mb: 256,
    disk_gb: 1,
    amount: 1,
    affinity: null,
    resource_properties: '',
    ...values,
  });

  const aggregates = async () =>
    (await nova(admin, '/os-aggregates')).aggregates as {
      name: string;
      hosts: string[];
      metadata: Record<string, string>;
      availability_zone: string | null;
    }[];

  it('should authenticate with Keystone tokens and keep projects apart', async () => {
    await http.get('/v1/leases').expect(401);
    await http.get('/v1/leases').set('X-Auth-Token', 'not-a-token').expect(401);
    const created = await http
      .post('/v1/leases')
      .set('X-Auth-Token', alice.token)
      .send({ name: 'alice-empty', start_date: '2050-01-01 00:00', end_date: '2050-01-02 00:00' })
      .expect(201);
    expect(created.body.lease.project_id).toBe(alice.projectId);
    await http
      .get(`/v1/leases/${created.body.lease.id}`)
      .set('X-Auth-Token', bob.token)
      .expect(404);
    await http.get('/v1/os-hosts').set('X-Auth-Token', alice.token).expect(403);
  });

  it('should register the fake hosts from Nova and run a host lease through Nova aggregates', async () => {
    for (const name of ['fake-1', 'fake-2', 'fake-3']) {
      const res = await http.post('/v1/os-hosts').set('X-Auth-Token', admin).send({ name });
      expect([201, 409]).toContain(res.status);
    }
    const hosts = (await http.get('/v1/os-hosts').set('X-Auth-Token', admin).expect(200)).body
      .hosts as { hypervisor_hostname: string; vcpus: number }[];
    expect(hosts.map((h) => h.hypervisor_hostname).sort()).toEqual(['fake-1', 'fake-2', 'fake-3']);
    expect(hosts.every((h) => h.vcpus > 0)).toBe(true);
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-1',
      'fake-2',
      'fake-3',
    ]);

    const lease = await aliceLease('alice-hosts', {
      resource_type: 'physical:host',
      min: 1,
      max: 1,
      hypervisor_properties: '["==", "$hypervisor_hostname", "fake-2"]',
      resource_properties: '',
    });
    const reservationId = lease.body.lease.reservations[0].id as string;
    await t.settle();
    const pool = (await aggregates()).find((a) => a.name === reservationId);
    expect(pool).toMatchObject({ availability_zone: `blazar_${reservationId}`, hosts: ['fake-2'] });
    expect(pool?.metadata['blazar:owner']).toBe(alice.projectId);
    expect(pool?.metadata.filter_tenant_id).toBe(alice.projectId);
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-1',
      'fake-3',
    ]);

    // Another project's plain boots never land on the reserved host (filter_tenant_id);
    // the owner's boot in the reservation's zone does.
    const plain = [];
    for (let i = 0; i < 3; i++)
      plain.push(await boot(bob.token, admin, `bob-${i}`, 'climate-small'));
    expect(plain.map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE']);
    expect(plain.map((s) => s.host)).not.toContain('fake-2');
    for (const s of plain) await novaAs(admin, 'DELETE', `/servers/${s.id}`);
    const own = await boot(
      alice.token,
      admin,
      'alice-reserved',
      'climate-small',
      `blazar_${reservationId}`,
    );
    expect(own).toMatchObject({ status: 'ACTIVE', host: 'fake-2' });

    t.clock.advance(2 * 3600_000);
    await t.settle();
    expect(
      (await http.get(`/v1/leases/${lease.body.lease.id}`).set('X-Auth-Token', alice.token)).body
        .lease.status,
    ).toBe('TERMINATED');
    expect((await aggregates()).find((a) => a.name === reservationId)).toBeUndefined();
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-1',
      'fake-2',
      'fake-3',
    ]); // the owner's server on the host was removed at the end
    expect(await gone(admin, own.id)).toBe(true);
  });

  it('should make the reservation flavor with its access for an instance lease and remove it at the end', async () => {
    const lease = await aliceLease('alice-slots', smallSlots({ memory_mb: 512, amount: 2 }));
    const reservationId = lease.body.lease.reservations[0].id as string;
    await t.settle();
    const flavor = (await nova(admin, `/flavors/${reservationId}`)).flavor as {
      name: string;
      vcpus: number;
      'os-flavor-access:is_public': boolean;
    };
    expect(flavor).toMatchObject({
      name: `reservation:${reservationId}`,
      vcpus: 1,
      'os-flavor-access:is_public': false,
    });
    const specs = (await nova(admin, `/flavors/${reservationId}/os-extra_specs`))
      .extra_specs as Record<string, string>;
    expect(specs['aggregate_instance_extra_specs:reservation']).toBe(reservationId);
    const access = (await nova(admin, `/flavors/${reservationId}/os-flavor-access`))
      .flavor_access as { tenant_id: string }[];
    expect(access.map((a) => a.tenant_id)).toEqual([alice.projectId]);
    const pool = (await aggregates()).find((a) => a.name === reservationId);
    expect(pool?.metadata.reservation).toBe(reservationId);
    // the owner's boot with the reservation flavor lands on one of its hosts
    const server = await boot(alice.token, admin, 'alice-slot', reservationId);
    expect(server.status).toBe('ACTIVE');
    expect(pool?.hosts).toContain(server.host);
    // another project cannot use the private flavor
    const refused = await novaAs(bob.token, 'POST', '/servers', {
      server: { name: 'bob-slot', imageRef: 'x', flavorRef: reservationId, networks: 'none' },
    });
    expect(refused.server).toBeUndefined();

    t.clock.advance(2 * 3600_000);
    await t.settle();
    expect((await nova(admin, `/flavors/${reservationId}`)).flavor).toBeUndefined();
    expect((await aggregates()).find((a) => a.name === reservationId)).toBeUndefined();
    expect(await gone(admin, server.id)).toBe(true);
  });

  it('should make the server group in the tenant project so that its boots spread over the slots', async () => {
    const lease = await aliceLease('alice-apart', smallSlots({ amount: 2, affinity: false }));
    const trustId = lease.body.lease.trust_id as string;
    expect(trustId).toMatch(/^[0-9a-f]{32}$/);
    // a create that cannot fit leaves no trust behind
    const trusts = async () =>
      (
        (await keystone(
          admin,
          'GET',
          `/OS-TRUST/trusts?trustor_user_id=${lease.body.lease.user_id}`,
        )) as { trusts: { id: string }[] }
      ).trusts.map((tr) => tr.id);
    expect(await trusts()).toContain(trustId);
    const before = (await trusts()).length;
    await http
      .post('/v1/leases')
      .set('X-Auth-Token', alice.token)
      .send({
        name: 'alice-too-big',
        start_date: 'now',
        end_date: new Date(t.clock.now().getTime() + 3600_000).toISOString(),
        reservations: [smallSlots({ vcpus: 1_000_000 })],
      })
      .expect(409);
    expect(await trusts()).toHaveLength(before);
    await t.settle();
    const shown = (
      await http.get(`/v1/leases/${lease.body.lease.id}`).set('X-Auth-Token', alice.token)
    ).body.lease.reservations[0];
    const group = (
      (await novaAs(alice.token, 'GET', `/os-server-groups/${shown.server_group_id}`)) as {
        server_group?: { name: string; policy: string; project_id: string };
      }
    ).server_group;
    expect(group).toMatchObject({
      name: `reservation:${shown.id}`,
      policy: 'anti-affinity',
      project_id: alice.projectId,
    });
    // the tenant boots into its group with the reservation flavor: one server per slot host
    const servers = [];
    for (let i = 0; i < 2; i++) {
      servers.push(
        await boot(alice.token, admin, `alice-apart-${i}`, shown.id, undefined, {
          group: shown.server_group_id,
        }),
      );
    }
    expect(servers.map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE']);
    const pool = (await aggregates()).find((a) => a.name === shown.id);
    expect(new Set(servers.map((s) => s.host)).size).toBe(2);
    for (const s of servers) expect(pool?.hosts).toContain(s.host);

    t.clock.advance(2 * 3600_000);
    await t.settle();
    for (const s of servers) expect(await gone(admin, s.id)).toBe(true);
    const after = await fetch(`${NOVA}/os-server-groups/${shown.server_group_id}`, {
      headers: { 'X-Auth-Token': admin },
    });
    expect(after.status).toBe(404);
    const trust = await fetch(`${KS}/OS-TRUST/trusts/${trustId}`, {
      headers: { 'X-Auth-Token': admin },
    });
    expect(trust.status).toBe(404);
    const ended = await http
      .get(`/v1/leases/${lease.body.lease.id}`)
      .set('X-Auth-Token', alice.token)
      .expect(200);
    expect(ended.body.lease).toMatchObject({ status: 'TERMINATED', trust_id: null });
  });

  it('should delete on a later sweep the trust of an ended lease that Keystone kept at its end', async () => {
    const lease = await aliceLease('alice-sweep', smallSlots({}));
    const trustId = lease.body.lease.trust_id as string;
    expect(trustId).toMatch(/^[0-9a-f]{32}$/);
    // as if Keystone had refused the deletion at the end: ended, the trust still there
    const client = await connect(db.url);
    await client.query(`UPDATE leases SET status = 'TERMINATED' WHERE id = $1`, [
      lease.body.lease.id,
    ]);
    const trust = () =>
      fetch(`${KS}/OS-TRUST/trusts/${trustId}`, { headers: { 'X-Auth-Token': admin } });
    expect((await trust()).status).toBe(200);
    await t.app.get(PoolsMaintenance).run();
    expect((await trust()).status).toBe(404);
    const { rows } = await client.query(`SELECT trust_id FROM leases WHERE id = $1`, [
      lease.body.lease.id,
    ]);
    await client.end();
    expect(rows[0].trust_id).toBeNull();
  });

  it('should reserve a shelved server and unshelve it onto its slot when the lease starts', async () => {
    const server = await boot(alice.token, admin, 'alice-shelved', 'climate-small');
    expect(server.status).toBe('ACTIVE');
    await novaAs(alice.token, 'POST', `/servers/${server.id}/action`, { shelve: null });
    for (let i = 0; i < 60; i++) {
      const s = (
        (await novaAs(admin, 'GET', `/servers/${server.id}`)) as { server: { status: string } }
      ).server;
      if (s.status === 'SHELVED_OFFLOADED') break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    // what Nova's side sends with the lease_params hint it received
    const lease = await aliceLease('alice-climate-flow', {
      resource_type: 'virtual:instance',
      resource_id: server.id,
    });
    expect(lease.body.lease.reservations[0]).toMatchObject({
      vcpus: 1,
      memory_mb: 256,
      disk_gb: 1,
      server_id: server.id,
    });
    await t.settle();
    let woke: { status: string; host: string | null } = { status: '', host: null };
    for (let i = 0; i < 60 && woke.status !== 'ACTIVE'; i++) {
      const s = (
        (await novaAs(admin, 'GET', `/servers/${server.id}`)) as { server: Record<string, unknown> }
      ).server;
      woke = {
        status: s.status as string,
        host: (s['OS-EXT-SRV-ATTR:host'] as string | null) ?? null,
      };
      if (woke.status !== 'ACTIVE') await new Promise((r) => setTimeout(r, 1000));
    }
    expect(woke.status).toBe('ACTIVE');
    const pool = (await aggregates()).find((a) => a.name === lease.body.lease.reservations[0].id);
    expect(pool?.hosts).toContain(woke.host);

    t.clock.advance(2 * 3600_000);
    await t.settle();
    expect(await gone(admin, server.id)).toBe(true);
  });

  it('should finish a start that failed half-way on retry and leave nothing behind in Nova', async () => {
    const names = async () => (await aggregates()).map((a) => a.name);
    const flavorIds = async () =>
      ((await nova(admin, '/flavors/detail?is_public=None')).flavors as { id: string }[]).map(
        (f) => f.id,
      );

    // an instance reservation: the flavor is made, then granting access fails
    driver.failNext.add('grantFlavorAccess');
    const slots = await aliceLease('alice-retry-slots', smallSlots({}));
    const slotId = slots.body.lease.reservations[0].id as string;
    // a host reservation: Climate's record moves the host, then Nova's add_host fails
    driver.failNext.add('addHost');
    const whole = await aliceLease('alice-retry-host', {
      resource_type: 'physical:host',
      min: 1,
      max: 1,
      hypervisor_properties: '["==", "$hypervisor_hostname", "fake-3"]',
      resource_properties: '',
    });
    const hostId = whole.body.lease.reservations[0].id as string;
    await t.settle();
    const status = async (id: string) =>
      (await http.get(`/v1/leases/${id}`).set('X-Auth-Token', alice.token)).body.lease
        .status as string;
    expect(await status(slots.body.lease.id)).toBe('PENDING');
    expect(await status(whole.body.lease.id)).toBe('PENDING');

    t.clock.advance(60_000);
    await t.settle();
    expect(await status(slots.body.lease.id)).toBe('ACTIVE');
    expect(await status(whole.body.lease.id)).toBe('ACTIVE');
    expect((await names()).filter((n) => n === slotId || n === hostId).sort()).toEqual(
      [slotId, hostId].sort(),
    );
    expect((await flavorIds()).filter((f) => f === slotId)).toEqual([slotId]);
    const access = (await nova(admin, `/flavors/${slotId}/os-flavor-access`)).flavor_access as {
      tenant_id: string;
    }[];
    expect(access.map((a) => a.tenant_id)).toEqual([alice.projectId]);
    expect((await aggregates()).find((a) => a.name === hostId)?.hosts).toEqual(['fake-3']);
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts).not.toContain('fake-3');

    t.clock.advance(2 * 3600_000);
    await t.settle();
    expect(await names()).not.toContain(slotId);
    expect(await names()).not.toContain(hostId);
    expect(await flavorIds()).not.toContain(slotId);
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-1',
      'fake-2',
      'fake-3',
    ]);
  });
});
