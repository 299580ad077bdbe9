/**
 * Climate against a real Keystone and Nova (fake compute hosts), as brought up by
 * ../shared/openstack/bringup.sh with Climate's scheduler filter loaded into
 * nova-scheduler (see .ci/run). Run with `npm run test:openstack`. Every assertion is
 * Blazar's behaviour, seen through Nova's own API.
 */
import { connect as amqpConnect } from 'amqplib';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { connect, createTestDatabase, TestDatabase } from '../support/database.js';
import { Maintenance } from '../../src/plugins/maintenance.service.js';
import { NovaListener } from '../../src/plugins/nova-listener.js';
import { InstanceUpkeep } from '../../src/plugins/virtual-instance/instance-upkeep.js';
import { startApp, TestApp } from '../support/app.js';
import { KeystoneClient } from '../../src/compute/keystone.client.js';
import { NovaDriver } from '../../src/compute/nova.driver.js';
import {
  boot,
  CLIMATE_PORT,
  computeService,
  forceDown,
  gone,
  keystone,
  KS,
  NOVA,
  NOVA_BROKER,
  novaAs,
  placement,
  removeServers,
  serverState,
  sleep,
  tenant,
  token,
  waitFor,
  type Booted,
  type Tenant,
} from './support.js';

jest.setTimeout(240_000);

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

describe('Climate on Keystone and Nova, with its filter in the scheduler', () => {
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
  let alice: Tenant;
  let bob: Tenant;
  const keystoneClient = new KeystoneClient({
    url: KS,
    username: 'admin',
    password: 'adminpass',
    project: 'admin',
    domain: 'Default',
  });
  const driver = new FlakyNova(keystoneClient, NOVA, null, 90_000);
  const climateEnv = {
    PLUGINS: 'physical:host,virtual:instance',
    AUTH_STRATEGY: 'keystone',
    COMPUTE_DRIVER: 'nova',
    KEYSTONE_URL: KS,
    NOVA_URL: NOVA,
    SERVICE_USERNAME: 'admin',
    SERVICE_PASSWORD: 'adminpass',
    SERVICE_PROJECT: 'admin',
  };

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
      env: climateEnv,
    });
    // nova-scheduler's filter asks this Climate
    await t.app.listen(CLIMATE_PORT, '127.0.0.1');
    t.clock.set(new Date());
    http = request(t.app.getHttpServer());
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const hostId = async (name: string) =>
    (
      (await http.get('/v1/os-hosts').set('X-Auth-Token', admin).expect(200)).body.hosts as {
        id: string;
        hypervisor_hostname: string;
      }[]
    ).find((h) => h.hypervisor_hostname === name)?.id;

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

  /** An instance reservation of small slots on the pool hosts fake-2 and fake-3. */
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
    (await novaAs(admin, 'GET', '/os-aggregates')).aggregates as {
      id: number;
      name: string;
      hosts: string[];
      metadata: Record<string, string>;
      availability_zone: string | null;
    }[];

  const leaseOf = async (id: string, who: Tenant = alice) =>
    (await http.get(`/v1/leases/${id}`).set('X-Auth-Token', who.token).expect(200)).body.lease;

  /** Ends every lease still running by moving Climate's clock past it. */
  const endAll = async () => {
    t.clock.advance(3 * 3600_000);
    await t.settle();
  };

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

  it('should keep every plain boot off the reservation pool, and admit only hinted boots of the owner', async () => {
    for (const name of ['fake-1', 'fake-2', 'fake-3']) {
      const res = await http.post('/v1/os-hosts').set('X-Auth-Token', admin).send({ name });
      expect([201, 409]).toContain(res.status);
    }
    const hosts = (await http.get('/v1/os-hosts').set('X-Auth-Token', admin).expect(200)).body
      .hosts as { hypervisor_hostname: string; vcpus: number; service_name: string }[];
    expect(hosts.map((h) => h.hypervisor_hostname).sort()).toEqual(['fake-1', 'fake-2', 'fake-3']);
    expect(hosts.every((h) => h.vcpus > 0)).toBe(true);
    const freepool = (await aggregates()).find((a) => a.name === 'freepool');
    expect(freepool?.hosts.sort()).toEqual(['fake-1', 'fake-2', 'fake-3']);

    // every host is in the pool: a plain boot of any project, admin's too, has nowhere to go
    const none = await boot(bob.token, admin, 'bob-nowhere', 'climate-small');
    const adminNone = await boot(admin, admin, 'admin-nowhere', 'climate-small');
    expect([none.status, adminNone.status]).toEqual(['ERROR', 'ERROR']);
    await removeServers(admin, [none.id, adminNone.id]);

    // fake-1 goes to the shared pool: plain boots land there, and only there
    await http
      .put(`/v1/os-hosts/${await hostId('fake-1')}/pool`)
      .set('X-Auth-Token', admin)
      .send({ pool: 'shared' })
      .expect(200);
    const plain = [];
    for (let i = 0; i < 3; i++)
      plain.push(await boot(bob.token, admin, `bob-${i}`, 'climate-small'));
    expect(plain.map((s) => [s.status, s.host])).toEqual([
      ['ACTIVE', 'fake-1'],
      ['ACTIVE', 'fake-1'],
      ['ACTIVE', 'fake-1'],
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

    // the owner's hinted boots land on its host; its plain boot does not
    const hint = { reservation: reservationId };
    const own = [
      await boot(alice.token, admin, 'alice-r1', 'climate-small', hint),
      await boot(alice.token, admin, 'alice-r2', 'climate-small', hint),
    ];
    expect(own.map((s) => [s.status, s.host])).toEqual([
      ['ACTIVE', 'fake-2'],
      ['ACTIVE', 'fake-2'],
    ]);
    const alicePlain = await boot(alice.token, admin, 'alice-plain', 'climate-small');
    expect(alicePlain).toMatchObject({ status: 'ACTIVE', host: 'fake-1' });
    // another project's boot with the owner's hint, and admin's, are refused
    const stolen = await boot(bob.token, admin, 'bob-stolen', 'climate-small', hint);
    const adminHint = await boot(admin, admin, 'admin-hint', 'climate-small', hint);
    expect([stolen.status, adminHint.status]).toEqual(['ERROR', 'ERROR']);
    await removeServers(admin, [stolen.id, adminHint.id, alicePlain.id]);

    t.clock.advance(2 * 3600_000);
    await t.settle();
    expect((await leaseOf(lease.body.lease.id)).status).toBe('TERMINATED');
    expect((await aggregates()).find((a) => a.name === reservationId)).toBeUndefined();
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-2',
      'fake-3',
    ]);
    // the owner's servers on its reservation went; nobody else's server was touched
    for (const s of own) expect(await gone(admin, s.id)).toBe(true);
    for (const s of plain) expect((await serverState(admin, s.id))?.status).toBe('ACTIVE');
    await removeServers(
      admin,
      plain.map((s) => s.id),
    );
  });

  it('should let Placement hold an instance reservation to its amount and show who holds the slots', async () => {
    const lease = await aliceLease('alice-slots', smallSlots({ memory_mb: 512, amount: 2 }));
    const reservationId = lease.body.lease.reservations[0].id as string;
    await t.settle();
    const flavor = (await novaAs(admin, 'GET', `/flavors/${reservationId}`)).flavor as {
      name: string;
      'os-flavor-access:is_public': boolean;
    };
    expect(flavor).toMatchObject({
      name: `reservation:${reservationId}`,
      'os-flavor-access:is_public': false,
    });
    const rc = `CUSTOM_RESERVATION_${reservationId.toUpperCase().replace(/-/g, '_')}`;
    const specs = (await novaAs(admin, 'GET', `/flavors/${reservationId}/os-extra_specs`))
      .extra_specs as Record<string, string>;
    expect(specs).toMatchObject({
      'aggregate_instance_extra_specs:reservation': reservationId,
      [`resources:${rc}`]: '1',
    });
    const pool = (await aggregates()).find((a) => a.name === reservationId);
    expect(pool?.metadata.reservation).toBe(reservationId);
    // Blazar shows Nova's aggregate id
    expect((await leaseOf(lease.body.lease.id)).reservations[0].aggregate_id).toBe(pool?.id);
    // Placement: the class, with one unit per slot on each slot host's child provider
    let units = 0;
    for (const host of pool?.hosts ?? []) {
      const { resource_providers: rps } = (await placement(
        admin,
        `/resource_providers?name=blazar_${host}`,
      )) as { resource_providers: { uuid: string }[] };
      const inv = (await placement(admin, `/resource_providers/${rps[0].uuid}/inventories`))
        .inventories as Record<string, { total: number }>;
      units += inv[rc]?.total ?? 0;
    }
    expect(units).toBe(2);

    // three boots with the reservation flavor: exactly two run, on its hosts
    const servers = [];
    for (let i = 0; i < 3; i++)
      servers.push(await boot(alice.token, admin, `alice-slot-${i}`, reservationId));
    const active = servers.filter((s) => s.status === 'ACTIVE');
    expect(active).toHaveLength(2);
    expect(servers.filter((s) => s.status === 'ERROR')).toHaveLength(1);
    for (const s of active) expect(pool?.hosts).toContain(s.host);
    // another project cannot use the private flavor
    const refused = await novaAs(bob.token, 'POST', '/servers', {
      server: { name: 'bob-slot', imageRef: 'x', flavorRef: reservationId, networks: 'none' },
    });
    expect(refused.server).toBeUndefined();
    // the claims show the servers Nova placed on the slots
    await t.app.get(Maintenance).run();
    const claims = (await leaseOf(lease.body.lease.id)).reservations[0].claims as {
      server_id: string;
      host: string;
    }[];
    expect(claims.map((c) => c.server_id).sort()).toEqual(active.map((s) => s.id).sort());

    await endAll();
    expect((await novaAs(admin, 'GET', `/flavors/${reservationId}`)).flavor).toBeUndefined();
    expect((await aggregates()).find((a) => a.name === reservationId)).toBeUndefined();
    for (const s of servers) expect(await gone(admin, s.id)).toBe(true);
    const classes = (await placement(admin, '/resource_classes')).resource_classes as {
      name: string;
    }[];
    expect(classes.map((c) => c.name)).not.toContain(rc);
  });

  it('should make the server group in the tenant project so that its boots spread over the slots', async () => {
    const lease = await aliceLease('alice-apart', smallSlots({ amount: 2, affinity: false }));
    const trustId = lease.body.lease.trust_id as string;
    expect(trustId).toMatch(/^[0-9a-f]{32}$/);
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
    // a create that cannot fit leaves no trust behind
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
    const shown = (await leaseOf(lease.body.lease.id)).reservations[0];
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
    const servers = [];
    for (let i = 0; i < 2; i++) {
      servers.push(
        await boot(alice.token, admin, `alice-apart-${i}`, shown.id, {
          group: shown.server_group_id,
        }),
      );
    }
    expect(servers.map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE']);
    expect(new Set(servers.map((s) => s.host)).size).toBe(2);

    await endAll();
    for (const s of servers) expect(await gone(admin, s.id)).toBe(true);
    const after = await fetch(`${NOVA}/os-server-groups/${shown.server_group_id}`, {
      headers: { 'X-Auth-Token': admin },
    });
    expect(after.status).toBe(404);
    const trust = await fetch(`${KS}/OS-TRUST/trusts/${trustId}`, {
      headers: { 'X-Auth-Token': admin },
    });
    expect(trust.status).toBe(404);
    expect(await leaseOf(lease.body.lease.id)).toMatchObject({
      status: 'TERMINATED',
      trust_id: null,
    });
  });

  it('should delete on a later sweep the trust of an ended lease that Keystone kept at its end', async () => {
    const lease = await aliceLease('alice-sweep', smallSlots({}));
    const trustId = lease.body.lease.trust_id as string;
    const client = await connect(db.url);
    await client.query(`UPDATE leases SET status = 'TERMINATED' WHERE id = $1`, [
      lease.body.lease.id,
    ]);
    const trust = () =>
      fetch(`${KS}/OS-TRUST/trusts/${trustId}`, { headers: { 'X-Auth-Token': admin } });
    expect((await trust()).status).toBe(200);
    await t.app.get(Maintenance).run();
    expect((await trust()).status).toBe(404);
    const { rows } = await client.query(`SELECT trust_id FROM leases WHERE id = $1`, [
      lease.body.lease.id,
    ]);
    await client.end();
    expect(rows[0].trust_id).toBeNull();
  });

  /** The lease Climate made for a server booted with reserved=True, by its name. */
  async function leaseNamed(name: string): Promise<Record<string, unknown> | undefined> {
    const leases = (await http.get('/v1/leases').set('X-Auth-Token', alice.token).expect(200)).body
      .leases as Record<string, unknown>[];
    return leases.find((l) => l.name === name);
  }

  /** The hosts an instance reservation's slots are on, in Climate's record. */
  async function slotHosts(reservationId: string): Promise<string[]> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(
        `SELECT h.hypervisor_hostname AS host FROM instance_allocations a
           JOIN hosts h ON h.id = a.host_id WHERE a.reservation_id = $1`,
        [reservationId],
      );
      return rows.map((r) => r.host as string);
    } finally {
      await client.end();
    }
  }

  const wire = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');

  it('should give a reserved=True boot its lease: shelved until the start, on its slot while it runs, gone at the end', async () => {
    const start = new Date(t.clock.now().getTime() + 3600_000);
    const end = new Date(start.getTime() + 3600_000);
    const params = JSON.stringify({ name: 'night-job', start: wire(start), end: wire(end) });
    const server = await boot(alice.token, admin, 'night-job', 'climate-small', {
      reserved: 'True',
      lease_params: params,
    });
    // until the start it boots where plain servers go
    expect(server).toMatchObject({ status: 'ACTIVE', host: 'fake-1' });
    const lease = await leaseNamed('night-job');
    expect(lease).toMatchObject({ status: 'PENDING' });
    const reservation = (lease?.reservations as Record<string, unknown>[])[0];
    expect(reservation).toMatchObject({ server_id: server.id, amount: 1 });
    // and then waits shelved (its RESERVED state)
    await t.app.get(Maintenance).run();
    expect((await serverState(admin, server.id))?.status).toBe('SHELVED_OFFLOADED');

    t.clock.set(new Date(start.getTime() + 1000));
    await t.settle();
    const woke = await waitFor(admin, server.id, ['ACTIVE']);
    const pool = (await aggregates()).find((a) => a.name === reservation.id);
    expect(pool?.hosts).toContain(woke.host);
    expect((await leaseOf(lease?.id as string)).status).toBe('ACTIVE');

    t.clock.set(new Date(end.getTime() + 1000));
    await t.settle();
    expect(await gone(admin, server.id)).toBe(true);
    expect((await leaseOf(lease?.id as string)).status).toBe('TERMINATED');
  });

  it('should keep a reserved=True boot that starts now on its slot and refuse malformed lease_params', async () => {
    const end = new Date(t.clock.now().getTime() + 3600_000);
    const params = JSON.stringify({ name: 'at-once', start: 'now', end: wire(end) });
    const server = await boot(alice.token, admin, 'at-once', 'climate-small', {
      reserved: 'True',
      lease_params: params,
    });
    expect(server.status).toBe('ACTIVE');
    const lease = await leaseNamed('at-once');
    const reservationId = (lease?.reservations as { id: string }[])[0].id;
    expect(await slotHosts(reservationId)).toEqual([server.host]);
    await t.settle();
    expect((await leaseOf(lease?.id as string)).status).toBe('ACTIVE');
    expect((await serverState(admin, server.id))?.status).toBe('ACTIVE');

    const bad = await boot(alice.token, admin, 'malformed', 'climate-small', {
      reserved: 'True',
      lease_params: '{"name": "malformed", "start": ',
    });
    expect(bad.status).toBe('ERROR');
    expect(await leaseNamed('malformed')).toBeUndefined();
    await removeServers(admin, [bad.id]);

    await endAll();
    expect(await gone(admin, server.id)).toBe(true);
  });

  it('should retry a start whose unshelve Nova refuses, with Nova’s reason, and not show it ACTIVE', async () => {
    const server = await boot(alice.token, admin, 'alice-shelved', 'climate-small');
    expect(server).toMatchObject({ status: 'ACTIVE', host: 'fake-1' });
    await novaAs(alice.token, 'POST', `/servers/${server.id}/action`, { shelve: null });
    await waitFor(admin, server.id, ['SHELVED_OFFLOADED']);
    const start = new Date(t.clock.now().getTime() + 600_000);
    const created = await http
      .post('/v1/leases')
      .set('X-Auth-Token', alice.token)
      .send({
        name: 'alice-climate-flow',
        start_date: wire(start),
        end_date: wire(new Date(start.getTime() + 3600_000)),
        reservations: [{ resource_type: 'virtual:instance', resource_id: server.id }],
      })
      .expect(201);
    const reservationId = created.body.lease.reservations[0].id as string;
    const [slotHost] = await slotHosts(reservationId);

    // the slot's compute service is off: Nova cannot unshelve there
    await computeService(admin, slotHost, false);
    try {
      t.clock.set(new Date(start.getTime() + 1000));
      await t.settle();
      const failed = await leaseOf(created.body.lease.id);
      expect(failed.status).toBe('PENDING');
      const startEvent = failed.events.find(
        (e: { event_type: string }) => e.event_type === 'start_lease',
      );
      expect(startEvent.status).toBe('UNDONE');
      expect(startEvent.last_error).toMatch(/did not unshelve/);
      expect((await serverState(admin, server.id))?.status).toBe('SHELVED_OFFLOADED');
    } finally {
      await computeService(admin, slotHost, true);
    }
    await sleep(2000);
    t.clock.advance(600_000);
    await t.settle();
    const retried = await leaseOf(created.body.lease.id);
    const started = retried.events.find(
      (e: { event_type: string }) => e.event_type === 'start_lease',
    );
    expect([retried.status, started.last_error]).toEqual(['ACTIVE', null]);
    expect(await waitFor(admin, server.id, ['ACTIVE'])).toMatchObject({ host: slotHost });

    await endAll();
    expect(await gone(admin, server.id)).toBe(true);
  });

  it('should finish a start that failed half-way on retry and leave nothing behind in Nova', async () => {
    const names = async () => (await aggregates()).map((a) => a.name);
    const flavorIds = async () =>
      (
        (await novaAs(admin, 'GET', '/flavors/detail?is_public=None')).flavors as { id: string }[]
      ).map((f) => f.id);

    driver.failNext.add('grantFlavorAccess');
    const slots = await aliceLease('alice-retry-slots', smallSlots({}));
    const slotId = slots.body.lease.reservations[0].id as string;
    driver.failNext.add('addHost');
    const whole = await aliceLease('alice-retry-host', {
      resource_type: 'physical:host',
      min: 1,
      max: 1,
      hypervisor_properties: '["==", "$hypervisor_hostname", "fake-3"]',
      resource_properties: '',
    });
    const hostReservation = whole.body.lease.reservations[0].id as string;
    await t.settle();
    expect((await leaseOf(slots.body.lease.id)).status).toBe('PENDING');
    expect((await leaseOf(whole.body.lease.id)).status).toBe('PENDING');

    t.clock.advance(60_000);
    await t.settle();
    expect((await leaseOf(slots.body.lease.id)).status).toBe('ACTIVE');
    expect((await leaseOf(whole.body.lease.id)).status).toBe('ACTIVE');
    expect((await names()).filter((n) => n === slotId || n === hostReservation).sort()).toEqual(
      [slotId, hostReservation].sort(),
    );
    expect((await flavorIds()).filter((f) => f === slotId)).toEqual([slotId]);
    expect((await aggregates()).find((a) => a.name === hostReservation)?.hosts).toEqual(['fake-3']);

    await endAll();
    expect(await names()).not.toContain(slotId);
    expect(await names()).not.toContain(hostReservation);
    expect(await flavorIds()).not.toContain(slotId);
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-2',
      'fake-3',
    ]);
  });

  it('should heal a running host reservation within seconds of Nova forcing its compute service down', async () => {
    // A second Climate on the same database and clock listens to Nova's notifications
    // (bringup with NOVA_NOTIFICATIONS=1); the other tests disable compute services on
    // purpose and keep it off. Its queue is this test's own.
    const queue = `climate-test-${Date.now()}`;
    const listening = await startApp({
      databaseUrl: db.url,
      driver,
      clock: t.clock,
      env: { ...climateEnv, NOVA_NOTIFY_URL: NOVA_BROKER, NOVA_NOTIFY_QUEUE: queue },
    });
    try {
      await listening.app.get(NovaListener).ready();
      await failover();
    } finally {
      await listening.close();
      const broker = await amqpConnect(NOVA_BROKER.replace(/^rabbit:/, 'amqp:'));
      await (await broker.createChannel()).deleteQueue(queue);
      await broker.close();
    }
  });

  /** A running host reservation, its host forced down in Nova, then back up. */
  async function failover(): Promise<void> {
    const lease = await aliceLease('alice-failover', {
      resource_type: 'physical:host',
      min: 1,
      max: 1,
      hypervisor_properties: '',
      resource_properties: '',
    });
    const reservationId = lease.body.lease.reservations[0].id as string;
    await t.settle();
    const poolHosts = async () =>
      (await aggregates()).find((a) => a.name === reservationId)?.hosts ?? [];
    const [failed] = await poolHosts();
    expect(['fake-2', 'fake-3']).toContain(failed);
    const spare = failed === 'fake-2' ? 'fake-3' : 'fake-2';
    const reservable = async (name: string) =>
      (
        (await http.get(`/v1/os-hosts/${await hostId(name)}`).set('X-Auth-Token', admin)).body
          .host as { reservable: boolean }
      ).reservable;

    const started = Date.now();
    await forceDown(admin, failed, true);
    try {
      // Climate's manager timer is off here: no poll runs, only the notification can act.
      for (let i = 0; i < 150 && (await poolHosts()).join() !== spare; i++) await sleep(100);
      const seconds = (Date.now() - started) / 1000;
      expect(await poolHosts()).toEqual([spare]);
      expect(seconds).toBeLessThan(15);
      expect(await reservable(failed)).toBe(false);
      const healed = await leaseOf(lease.body.lease.id);
      expect(healed.reservations[0].resources_changed).toBe(true);
      expect(healed.degraded).toBe(false);
    } finally {
      await forceDown(admin, failed, false);
    }
    for (let i = 0; i < 150 && !(await reservable(failed)); i++) await sleep(100);
    expect(await reservable(failed)).toBe(true);
    await endAll();
    expect((await aggregates()).find((a) => a.name === 'freepool')?.hosts.sort()).toEqual([
      'fake-2',
      'fake-3',
    ]);
  }
  /**
   * Sites where every host is reservable: fake-1 back in the freepool for these cases (it
   * is in the shared pool above), and back in the shared pool after.
   */
  describe('with every host in the reservation pool', () => {
    beforeAll(async () => {
      await http
        .put(`/v1/os-hosts/${await hostId('fake-1')}/pool`)
        .set('X-Auth-Token', admin)
        .send({ pool: 'freepool' })
        .expect(200);
      const freepool = (await aggregates()).find((a) => a.name === 'freepool');
      expect(freepool?.hosts.sort()).toEqual(['fake-1', 'fake-2', 'fake-3']);
    });
    afterAll(async () => {
      await http
        .put(`/v1/os-hosts/${await hostId('fake-1')}/pool`)
        .set('X-Auth-Token', admin)
        .send({ pool: 'shared' });
    });
    // A case that failed half-way leaves no lease holding hosts for the next.
    afterEach(endAll);

    /** Bob's host lease on `hosts` from now to `end`, started unless told not to. */
    async function bobHolds(hosts: string[], end: Date, started = true): Promise<string> {
      const res = await http
        .post('/v1/leases')
        .set('X-Auth-Token', bob.token)
        .send({
          name: `bob-holds-${hosts.join('-')}`,
          start_date: 'now',
          end_date: end.toISOString(),
          reservations: [
            {
              resource_type: 'physical:host',
              min: hosts.length,
              max: hosts.length,
              hypervisor_properties: JSON.stringify(['in', '$hypervisor_hostname', ...hosts]),
              resource_properties: '',
            },
          ],
        })
        .expect(201);
      if (started) await t.settle();
      return res.body.lease.reservations[0].id as string;
    }

    /** The start of the minute `minutes` from Climate's now. */
    const minuteAhead = (minutes: number) => {
      const at = new Date(t.clock.now().getTime() + minutes * 60_000);
      at.setUTCSeconds(0, 0);
      return at;
    };

    it('should let a reserved=True boot for later wait shelved off a free pool host, then run on its slot', async () => {
      // bob runs a server on the host he holds now
      const bobReservation = await bobHolds(['fake-2'], new Date(minuteAhead(90)));
      const bobs = await boot(bob.token, admin, 'bob-held', 'climate-small', {
        reservation: bobReservation,
      });
      expect(bobs).toMatchObject({ status: 'ACTIVE', host: 'fake-2' });

      const start = minuteAhead(2);
      const end = new Date(start.getTime() + 3600_000);
      const params = JSON.stringify({ name: 'pooled-job', start: wire(start), end: wire(end) });
      const server = await boot(alice.token, admin, 'pooled-job', 'climate-small', {
        reserved: 'True',
        lease_params: params,
      });
      // on a free pool host that no lease holds now, never bob's
      expect(server.status).toBe('ACTIVE');
      expect(['fake-1', 'fake-3']).toContain(server.host);
      const lease = await leaseNamed('pooled-job');
      expect(lease).toMatchObject({ status: 'PENDING' });
      const reservation = (lease?.reservations as Record<string, unknown>[])[0];
      // The manager's short shelve tick (SHELVE_POLL_MS), not the hourly-ish upkeep.
      const booted = Date.now();
      await t.app.get(InstanceUpkeep).shelveNew();
      expect((await serverState(admin, server.id))?.status).toBe('SHELVED_OFFLOADED');
      process.stdout.write(`pooled reserved boot shelved in ${Date.now() - booted} ms\n`);

      t.clock.set(new Date(start.getTime() + 1000));
      await t.settle();
      const woke = await waitFor(admin, server.id, ['ACTIVE']);
      expect(await slotHosts(reservation.id as string)).toEqual([woke.host]);
      expect((await leaseOf(lease?.id as string)).status).toBe('ACTIVE');
      // bob's server was not touched
      expect(await serverState(admin, bobs.id)).toMatchObject({
        status: 'ACTIVE',
        host: 'fake-2',
      });

      await endAll();
      expect(await gone(admin, server.id)).toBe(true);
      expect((await leaseOf(lease?.id as string)).status).toBe('TERMINATED');
      expect(await gone(admin, bobs.id)).toBe(true);
    });

    /** Alice's reserved=True boot for a lease from `start`, an hour long. */
    const reservedBoot = (name: string, start: Date) =>
      boot(alice.token, admin, name, 'climate-small', {
        reserved: 'True',
        lease_params: JSON.stringify({
          name,
          start: wire(start),
          end: wire(new Date(start.getTime() + 3600_000)),
        }),
      });

    /** The server is in ERROR with Nova's NoValidHost, and has no lease. */
    async function refused(server: Booted, name: string): Promise<void> {
      expect(server.status).toBe('ERROR');
      const shown = (await novaAs(admin, 'GET', `/servers/${server.id}`)).server as {
        fault?: { message: string };
      };
      expect(shown.fault?.message).toContain('No valid host');
      expect(await leaseNamed(name)).toBeUndefined();
    }

    /** Whether Climate's filter made a lease for the server (its idempotency key). */
    async function leaseWasMade(serverId: string): Promise<boolean> {
      const client = await connect(db.url);
      try {
        const { rows } = await client.query(`SELECT 1 FROM idempotency_keys WHERE key = $1`, [
          `nova-instance:${serverId}`,
        ]);
        return rows.length > 0;
      } finally {
        await client.end();
      }
    }

    it('should refuse a reserved=True boot for later with NoValidHost and delete its lease when every host is held now', async () => {
      const holderEnd = minuteAhead(1);
      const start = new Date(holderEnd.getTime() + 60_000);
      // bob holds every host from now, his lease not started yet: the hosts are still in
      // the freepool, and only Climate knows they are held
      await bobHolds(['fake-1', 'fake-2', 'fake-3'], holderEnd, false);
      const nowhere = await reservedBoot('pooled-nowhere', start);
      await refused(nowhere, 'pooled-nowhere');
      // Climate's filter made the lease, found no host and deleted it
      expect(await leaseWasMade(nowhere.id)).toBe(true);

      // started, bob's hosts are his project's alone in Nova: refused before Climate is asked
      await t.settle();
      const isolated = await reservedBoot('pooled-isolated', start);
      await refused(isolated, 'pooled-isolated');
      await removeServers(admin, [nowhere.id, isolated.id]);
      await endAll();
    });
  });
});
