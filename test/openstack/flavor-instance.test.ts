/**
 * flavor:instance against the real Keystone, Nova and Placement: Blazar-tempest's
 * TestFlavorReservationScenario.test_flavor_instance_reservation replayed, and the same
 * reservation ended by its lease's end, and by a flavor's trait. Run with
 * `npm run test:openstack` (see .ci/run).
 */
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { createTestDatabase, TestDatabase } from '../support/database.js';
import { startApp, TestApp } from '../support/app.js';
import { KeystoneClient } from '../../src/compute/keystone.client.js';
import { NovaDriver } from '../../src/compute/nova.driver.js';
import {
  boot,
  CLIMATE_PORT,
  gone,
  KS,
  NOVA,
  novaAs,
  placement,
  PLACEMENT,
  removeServers,
  tenant,
  token,
  type Tenant,
} from './support.js';
import { blazarCli, clientSendsFlavors, minute } from '../support/blazar-cli.js';

jest.setTimeout(240_000);

/** A Placement write as admin (traits), at the microversion traits need. */
async function placementPut(adminToken: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`${PLACEMENT}${path}`, {
    method: 'PUT',
    headers: {
      'X-Auth-Token': adminToken,
      'OpenStack-API-Version': 'placement 1.22',
      'Content-Type': 'application/json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

describe('flavor:instance on Keystone, Nova and Placement', () => {
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
  let alice: Tenant;
  let bob: Tenant;
  const driver = new NovaDriver(
    new KeystoneClient({
      url: KS,
      username: 'admin',
      password: 'adminpass',
      project: 'admin',
      domain: 'Default',
    }),
    NOVA,
    null,
    90_000,
  );

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = (await token('admin', 'adminpass', 'admin')).token;
    alice = await tenant(admin, 'climate-alice');
    bob = await tenant(admin, 'climate-bob');
    // the flavor tempest's scenario leases (409 when it is there already)
    await novaAs(admin, 'POST', '/flavors', {
      flavor: {
        id: 'climate-flv',
        name: 'climate-flv',
        ram: 256,
        vcpus: 1,
        disk: 1,
        'OS-FLV-EXT-DATA:ephemeral': 1,
      },
    });
    await novaAs(admin, 'POST', '/flavors/climate-flv/os-extra_specs', {
      extra_specs: { 'hw_rng:allowed': 'True' },
    });
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: {
        PLUGINS: 'physical:host,virtual:instance,flavor:instance',
        AUTH_STRATEGY: 'keystone',
        COMPUTE_DRIVER: 'nova',
        KEYSTONE_URL: KS,
        NOVA_URL: NOVA,
        SERVICE_USERNAME: 'admin',
        SERVICE_PASSWORD: 'adminpass',
        SERVICE_PROJECT: 'admin',
      },
    });
    // nova-scheduler's filter asks this Climate
    await t.app.listen(CLIMATE_PORT, '127.0.0.1');
    t.clock.set(new Date());
    http = request(t.app.getHttpServer());
    // every host reservable: a plain boot has nowhere to go
    for (const name of ['fake-1', 'fake-2', 'fake-3']) {
      const res = await http.post('/v1/os-hosts').set('X-Auth-Token', admin).send({ name });
      expect([201, 409]).toContain(res.status);
    }
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const flavorLease = (name: string, values: Record<string, unknown>) =>
    http
      .post('/v1/leases')
      .set('X-Auth-Token', alice.token)
      .send({
        name,
        start_date: 'now',
        end_date: new Date(t.clock.now().getTime() + 3600_000).toISOString(),
        reservations: [
          {
            resource_type: 'flavor:instance',
            flavor_id: 'climate-flv',
            amount: 1,
            affinity: null,
            resource_properties: '',
            ...values,
          },
        ],
      })
      .expect(201);

  const leaseOf = async (id: string) =>
    (await http.get(`/v1/leases/${id}`).set('X-Auth-Token', alice.token).expect(200)).body.lease;
  const poolHosts = async (name: string) =>
    (
      (await novaAs(admin, 'GET', '/os-aggregates')).aggregates as {
        name: string;
        hosts: string[];
      }[]
    ).find((a) => a.name === name)?.hosts;

  it("should replay tempest's test_flavor_instance_reservation", async () => {
    const created = await flavorLease('tempest-flavor', {});
    const rid = created.body.lease.reservations[0].id as string;
    expect(created.body.lease.reservations[0]).toMatchObject({
      resource_type: 'flavor:instance',
      flavor_id: rid,
      vcpus: 1,
      memory_mb: 256,
      disk_gb: 1,
      amount: 1,
      affinity: null,
    });
    expect(JSON.parse(created.body.lease.reservations[0].resource_properties)).toMatchObject({
      id: 'climate-flv',
      'OS-FLV-EXT-DATA:ephemeral': 1,
      extra_specs: { 'hw_rng:allowed': 'True' },
    });
    // bob cannot see alice's lease
    await http
      .get(`/v1/leases/${created.body.lease.id}`)
      .set('X-Auth-Token', bob.token)
      .expect(404);
    await t.settle();
    const lease = await leaseOf(created.body.lease.id);
    expect(lease.status).toBe('ACTIVE');

    // the reservation flavor copies the source flavor, private to alice
    const flavor = (await novaAs(admin, 'GET', `/flavors/${rid}`)).flavor as Record<
      string,
      unknown
    >;
    expect(flavor).toMatchObject({
      name: `reservation:${rid}`,
      vcpus: 1,
      ram: 256,
      disk: 1,
      'OS-FLV-EXT-DATA:ephemeral': 1,
      'os-flavor-access:is_public': false,
      extra_specs: {
        'hw_rng:allowed': 'True',
        'aggregate_instance_extra_specs:reservation': rid,
        [`resources:CUSTOM_RESERVATION_${rid.toUpperCase().replace(/-/g, '_')}`]: '1',
      },
    });

    // boot with the reservation flavor (no hint): ACTIVE on the reserved host
    const first = await boot(alice.token, admin, 'flavor-1', rid);
    expect(first.status).toBe('ACTIVE');
    expect(await poolHosts(rid)).toEqual([first.host]);
    // a second server has no slot left; a server of the plain flavor has no host
    const second = await boot(alice.token, admin, 'flavor-2', rid);
    const plain = await boot(alice.token, admin, 'flavor-plain', 'climate-flv');
    expect([second.status, plain.status]).toEqual(['ERROR', 'ERROR']);
    await removeServers(admin, [second.id, plain.id]);

    // deleting the lease terminates the server and removes what the reservation made
    await http
      .delete(`/v1/leases/${created.body.lease.id}`)
      .set('X-Auth-Token', alice.token)
      .expect(204);
    expect(await gone(admin, first.id)).toBe(true);
    expect((await novaAs(admin, 'GET', `/flavors/${rid}`)).flavor).toBeUndefined();
    expect(await poolHosts(rid)).toBeUndefined();
  });

  it('should take the flavor:instance lease commands of both CLIs with Keystone tokens', async () => {
    const endpoint = `http://127.0.0.1:${CLIMATE_PORT}/v1`;
    const blazar = (...args: string[]) => blazarCli('blazar', endpoint, args, alice.token);
    const openstack = (...args: string[]) => blazarCli('openstack', endpoint, args, alice.token);
    const named = async (name: string) => {
      const res = await http.get('/v1/leases').set('X-Auth-Token', alice.token).expect(200);
      return (res.body.leases as { id: string; name: string }[]).find((l) => l.name === name);
    };
    const now = t.clock.now().getTime();
    const dates = ['--start-date', minute(new Date(now + 120_000))];
    dates.push('--end-date', minute(new Date(now + 3 * 3600_000)));
    const reservation = 'resource_type=flavor:instance,flavor_id=climate-flv,amount=1';
    const made = await blazar('lease-create', ...dates, '--reservation', reservation, 'cli-flv');
    if (clientSendsFlavors()) {
      expect([made.code, made.out]).toEqual([0, expect.any(String)]);
    } else {
      // Debian's client 3.5.0 fails before sending (KeyError); what 4.1+ sends goes by HTTP
      // (its KeyError names the first key it cannot look up: flavor_id, here not a number)
      expect(made.out.trim().split('\n').at(-1)).toMatch(/^'(resource_type|flavor_id)'$/);
      expect(await named('cli-flv')).toBeUndefined();
      await http
        .post('/v1/leases')
        .set('X-Auth-Token', alice.token)
        .send({
          name: 'cli-flv',
          start_date: dates[1],
          end_date: dates[3],
          reservations: [{ resource_type: 'flavor:instance', flavor_id: 'climate-flv', amount: 1 }],
          events: [],
        })
        .expect(201);
    }
    const id = (await named('cli-flv'))?.id as string;
    const endDate = (await leaseOf(id)).end_date as string;
    const shown = await openstack('reservation', 'lease', 'show', 'cli-flv', '-f', 'json');
    expect(shown.code).toBe(0);
    const reservations = JSON.parse(shown.stdout).reservations as string;
    expect(reservations).toContain('"resource_type": "flavor:instance"');
    const rid = (await leaseOf(id)).reservations[0].id as string;
    expect(reservations).toContain(`"flavor_id": "${rid}"`);
    expect((await blazar('lease-list')).out).toContain(id);

    // started by the manager: the reservation flavor is in Nova, private to alice
    t.clock.advance(180_000);
    await t.settle();
    expect((await leaseOf(id)).status).toBe('ACTIVE');
    const flavor = (await novaAs(admin, 'GET', `/flavors/${rid}`)).flavor as { name: string };
    expect(flavor.name).toBe(`reservation:${rid}`);

    // no update but a rename, through either client
    const prolong = await blazar('lease-update', '--prolong-for', '1h', 'cli-flv');
    expect(prolong.code).not.toBe(0);
    expect(prolong.out).toContain(
      "Updating leases for 'flavor:instance' type reservations is not yet supported.",
    );
    const renamed = await openstack('reservation', 'lease', 'set', '--name', 'cli-flv2', id);
    expect(renamed.code).toBe(0);
    expect((await leaseOf(id)).end_date).toBe(endDate);

    // deleted: the reservation flavor and aggregate leave Nova
    expect((await openstack('reservation', 'lease', 'delete', 'cli-flv2')).code).toBe(0);
    expect(await named('cli-flv2')).toBeUndefined();
    expect((await novaAs(admin, 'GET', `/flavors/${rid}`)).flavor).toBeUndefined();
    expect(await poolHosts(rid)).toBeUndefined();
  });

  it('should clean up at the end of the lease and follow the flavor traits through Placement', async () => {
    // fake-3's compute node gets a trait the flavor requires
    const trait = 'CUSTOM_CLIMATE_FAST';
    expect([201, 204]).toContain(await placementPut(admin, `/traits/${trait}`));
    const { resource_providers: rps } = (await placement(
      admin,
      '/resource_providers?name=fake-3',
    )) as { resource_providers: { uuid: string; generation: number }[] };
    const { traits } = (await placement(admin, `/resource_providers/${rps[0].uuid}/traits`)) as {
      traits: string[];
    };
    expect(
      await placementPut(admin, `/resource_providers/${rps[0].uuid}/traits`, {
        resource_provider_generation: rps[0].generation,
        traits: [...traits, trait],
      }),
    ).toBe(200);
    await novaAs(admin, 'POST', '/flavors', {
      flavor: { id: 'climate-fast', name: 'climate-fast', ram: 256, vcpus: 1, disk: 1 },
    });
    await novaAs(admin, 'POST', '/flavors/climate-fast/os-extra_specs', {
      extra_specs: { [`trait:${trait}`]: 'required' },
    });

    const created = await flavorLease('fast', { flavor_id: 'climate-fast', amount: 2 });
    const rid = created.body.lease.reservations[0].id as string;
    await t.settle();
    expect((await leaseOf(created.body.lease.id)).status).toBe('ACTIVE');
    expect(await poolHosts(rid)).toEqual(['fake-3']);
    const server = await boot(alice.token, admin, 'fast-1', rid);
    expect(server).toMatchObject({ status: 'ACTIVE', host: 'fake-3' });

    t.clock.advance(2 * 3600_000);
    await t.settle();
    expect((await leaseOf(created.body.lease.id)).status).toBe('TERMINATED');
    expect(await gone(admin, server.id)).toBe(true);
    expect((await novaAs(admin, 'GET', `/flavors/${rid}`)).flavor).toBeUndefined();
    expect(await poolHosts(rid)).toBeUndefined();
    const classes = (await placement(admin, '/resource_classes')).resource_classes as {
      name: string;
    }[];
    expect(classes.map((c) => c.name)).not.toContain(
      `CUSTOM_RESERVATION_${rid.toUpperCase().replace(/-/g, '_')}`,
    );
    // fake-3 as it was, for the suites after this one
    const now = (await placement(admin, `/resource_providers/${rps[0].uuid}/traits`)) as {
      resource_provider_generation: number;
      traits: string[];
    };
    await placementPut(admin, `/resource_providers/${rps[0].uuid}/traits`, {
      resource_provider_generation: now.resource_provider_generation,
      traits: now.traits.filter((x) => x !== trait),
    });
  });
});
