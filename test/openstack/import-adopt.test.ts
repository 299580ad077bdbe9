/**
 * A Blazar site switching to Climate against the real Nova and Placement: Nova's objects
 * made as Blazar makes them for three of the dump's reservations (a running host
 * reservation, a running instance reservation, a pending instance reservation), the dump
 * imported, Nova's state adopted (`import:blazar --adopt`), then Climate runs them to
 * their end on its own clock.
 */
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { KeystoneClient } from '../../src/compute/keystone.client.js';
import { NovaDriver } from '../../src/compute/nova.driver.js';
import { runCli } from '../../src/import/cli.js';
import { startApp, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import {
  type BlazarDatabase,
  expectedBlazar,
  type ExpectedLease,
  loadBlazarDump,
} from '../support/mariadb.js';
import {
  addHost,
  aggregates,
  classExists,
  dropAggregate,
  instanceObjects,
  makeAggregate,
  makeReservationProvider,
  placementAs,
  reservationClass,
  reservationUnits,
  sizeReservation,
} from './blazar-state.js';
import {
  boot,
  CLIMATE_PORT,
  gone,
  KS,
  NOVA,
  novaAs,
  tenant,
  token,
  type Tenant,
} from './support.js';

jest.setTimeout(300_000);

const FREEPOOL = 'blazar-freepool';
const expected = expectedBlazar();
const lease = (name: string) => expected.leases.find((l) => l.name === name) as ExpectedLease;
const hostLease = lease('p1-mixed-ending');
const vmLease = lease('p2-vms-affinity-now');
const hostRes = hostLease.reservations.find((r) => r.resource_type === 'physical:host')!;
const vmRes = vmLease.reservations[0];
const laterLease = lease('p1-vms-antiaffinity-jan');
const laterRes = laterLease.reservations[0];
/** The dump's hosts these reservations use, as the fake compute hosts. */
const HOSTS: Record<string, string> = { '5': 'fake-1', '10': 'fake-2', '6': 'fake-3' };

describe('a Blazar site switching to Climate on the real Nova', () => {
  let admin: string;
  let p1: Tenant;
  let p2: Tenant;
  let source: BlazarDatabase;
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let groupId: string;
  let laterGroupId: string;
  let ids: Map<string, number>;
  const env = () => ({
    DATABASE_URL: db.url,
    PLUGINS: 'physical:host,virtual:instance',
    AUTH_STRATEGY: 'keystone',
    COMPUTE_DRIVER: 'nova',
    KEYSTONE_URL: KS,
    NOVA_URL: NOVA,
    SERVICE_USERNAME: 'admin',
    SERVICE_PASSWORD: 'adminpass',
    SERVICE_PROJECT: 'admin',
    FREEPOOL_NAME: FREEPOOL,
    LOG_LEVEL: 'error',
  });
  const cli = async (options: { adopt?: boolean; dryRun?: boolean }) => {
    const lines: string[] = [];
    const status = await runCli(
      {
        from: options.adopt ? '' : source.url,
        verify: false,
        skipTypes: ['virtual:floatingip'],
        dryRun: false,
        ...options,
      },
      env(),
      (line) => lines.push(line),
    );
    return { status, output: lines.join('\n') };
  };
  const pool = async (name: string) => (await aggregates(admin)).find((a) => a.name === name);

  /** The dump cut to the three leases and hosts, on this cloud's projects and objects. */
  async function blazarSite(): Promise<void> {
    const keep = [hostLease.id, vmLease.id, laterLease.id];
    const q = (text: string, values: unknown[] = []) => source.query(text, values);
    await q('SET FOREIGN_KEY_CHECKS = 0');
    const others = `SELECT id FROM reservations WHERE lease_id NOT IN (?, ?, ?)`;
    for (const table of [
      'computehost_allocations',
      'computehost_reservations',
      'instance_reservations',
    ]) {
      await q(`DELETE FROM ${table} WHERE reservation_id IN (${others})`, keep);
    }
    await q(`DELETE FROM events WHERE lease_id NOT IN (?, ?, ?)`, keep);
    await q(`DELETE FROM reservations WHERE lease_id NOT IN (?, ?, ?)`, keep);
    await q(`DELETE FROM leases WHERE id NOT IN (?, ?, ?)`, keep);
    const kept = Object.keys(HOSTS);
    for (const table of [
      'computehost_extra_capabilities',
      'computehost_resource_inventory',
      'computehost_trait',
    ]) {
      await q(`DELETE FROM ${table} WHERE computehost_id NOT IN (?, ?, ?)`, kept);
    }
    await q(`DELETE FROM computehosts WHERE id NOT IN (?, ?, ?)`, kept);
    for (const [id, name] of Object.entries(HOSTS)) {
      await q(`UPDATE computehosts SET hypervisor_hostname = ?, service_name = ? WHERE id = ?`, [
        name,
        name,
        id,
      ]);
    }
    await q(`UPDATE leases SET project_id = ? WHERE id = ?`, [p1.projectId, hostLease.id]);
    await q(`UPDATE leases SET project_id = ? WHERE id = ?`, [p2.projectId, vmLease.id]);
    await q(`UPDATE leases SET project_id = ? WHERE id = ?`, [p1.projectId, laterLease.id]);
    await q(`UPDATE computehost_reservations SET aggregate_id = ? WHERE reservation_id = ?`, [
      ids.get(hostRes.id),
      hostRes.id,
    ]);
    await q(
      `UPDATE instance_reservations SET aggregate_id = ?, server_group_id = ? WHERE reservation_id = ?`,
      [ids.get(vmRes.id), groupId, vmRes.id],
    );
    await q(
      `UPDATE instance_reservations SET aggregate_id = ?, server_group_id = ? WHERE reservation_id = ?`,
      [ids.get(laterRes.id), laterGroupId, laterRes.id],
    );
    await q('SET FOREIGN_KEY_CHECKS = 1');
  }

  beforeAll(async () => {
    admin = (await token('admin', 'adminpass', 'admin')).token;
    p1 = await tenant(admin, 'adopt-p1');
    p2 = await tenant(admin, 'adopt-p2');
    // A Blazar site has none of Climate's own pools: drop what earlier suites left
    // (Climate's default-named freepool, shared and recycle pools) as well as ours.
    const climatePools = ['freepool', 'shared', 'recycle'];
    for (const name of [FREEPOOL, ...climatePools, hostRes.id, vmRes.id, laterRes.id]) {
      await dropAggregate(admin, name);
    }
    // Blazar: every host registered (its reservation provider made, in the freepool) ...
    for (const host of Object.values(HOSTS)) await makeReservationProvider(admin, host);
    ids = new Map([
      [FREEPOOL, await makeAggregate(admin, FREEPOOL, null, {}, ['fake-2', 'fake-3'])],
    ]);
    // ... the host reservation's pool made at create, its host moved in at the start ...
    ids.set(
      hostRes.id,
      await makeAggregate(
        admin,
        hostRes.id,
        `blazar_${hostRes.id}`,
        { 'blazar:owner': p1.projectId },
        ['fake-1'],
      ),
    );
    // ... each instance reservation's group (as the tenant), flavor, aggregate and class,
    // its access, hosts and inventory once started.
    const vmSize = { vcpus: 2, ram: 4096, disk: 20 };
    const vm = await instanceObjects(admin, p2, vmRes.id, 'affinity', vmSize, ['fake-2']);
    groupId = vm.groupId;
    ids.set(vmRes.id, vm.aggregateId);
    await sizeReservation(admin, vmRes.id, 'fake-2', 4);
    const laterSize = { vcpus: 8, ram: 16384, disk: 80 };
    const made = await instanceObjects(admin, p1, laterRes.id, 'anti-affinity', laterSize, []);
    laterGroupId = made.groupId;
    ids.set(laterRes.id, made.aggregateId);
    await placementAs(admin, 'PUT', `/resource_classes/${reservationClass(laterRes.id)}`);

    source = await loadBlazarDump();
    await blazarSite();
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await source?.drop();
    if (admin !== undefined) await dropAggregate(admin, FREEPOOL);
  });

  it('should import the dump and adopt what Blazar made without making it again', async () => {
    expect(await cli({})).toMatchObject({ status: 0 });
    // Blazar's start had left fake-1 in its freepool too: a host in two pools.
    await addHost(admin, ids.get(FREEPOOL)!, 'fake-1');
    const dry = await cli({ adopt: true, dryRun: true });
    expect(dry.status).toBe(0);
    expect(dry.output).toContain(
      `MISMATCH host fake-1 is in 2 pools in Nova (${[hostRes.id, 'freepool'].sort().join(', ')}); Climate has it in ${hostRes.id}`,
    );
    expect((await pool(FREEPOOL))?.hosts).toContain('fake-1');

    const done = await cli({ adopt: true });
    expect(done.output).toContain('adopted from Nova: 4 aggregate(s) (freepool blazar-freepool');
    expect(done.output).toContain('2 flavor(s), 2 server group(s), 2 Placement class(es)');
    expect(done.output).toContain('adopt: 1 mismatch(es), 1 healed');
    expect(done.status).toBe(0);
    // Nothing made again: the same aggregates, group and flavor; fake-1 only in its pool.
    for (const [name, id] of ids) expect((await pool(name))?.id).toBe(id);
    expect((await pool(FREEPOOL))?.hosts.sort()).toEqual(['fake-2', 'fake-3']);
    const hostPool = await pool(hostRes.id);
    // What Blazar's own filter reads stays: the zone, the owner, the freepool's name.
    expect(hostPool).toMatchObject({
      hosts: ['fake-1'],
      availability_zone: `blazar_${hostRes.id}`,
    });
    expect(hostPool?.metadata['blazar:owner']).toBe(p1.projectId);
    expect((await pool(vmRes.id))?.hosts).toEqual(['fake-2']);
    expect((await novaAs(admin, 'GET', `/os-server-groups/${groupId}`)).server_group).toBeDefined();
    expect(await reservationUnits(admin, vmRes.id, 'fake-2')).toBe(4);
    expect((await cli({ adopt: true, dryRun: true })).output).toContain(
      'adopt: Nova holds what Climate holds',
    );
  });

  it('should start and end the reservations with Nova right at each step', async () => {
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
      FREEPOOL,
    );
    t = await startApp({ databaseUrl: db.url, driver, env: env() });
    await t.app.listen(CLIMATE_PORT, '127.0.0.1');
    http = request(t.app.getHttpServer());
    const status = async (id: string) =>
      (await http.get(`/v1/leases/${id}`).set('X-Auth-Token', admin).expect(200)).body.lease;
    t.clock.set(new Date('2030-01-01T00:00:00Z'));
    await t.settle();
    const shown = (await status(vmLease.id)).reservations[0];
    expect(shown).toMatchObject({
      server_group_id: groupId,
      aggregate_id: ids.get(vmRes.id),
      flavor_id: vmRes.id,
    });

    // The adopted flavor, aggregate and class take a server, on the reservation's host.
    const server = await boot(p2.token, admin, 'adopted-slot', vmRes.id);
    expect(server).toMatchObject({ status: 'ACTIVE', host: 'fake-2' });

    t.clock.set(new Date('2030-01-01T02:00:00Z'));
    await t.settle();
    expect((await status(hostLease.id)).status).toBe('TERMINATED');
    expect(await pool(hostRes.id)).toBeUndefined();
    expect((await pool(FREEPOOL))?.hosts.sort()).toEqual(['fake-1', 'fake-2', 'fake-3']);
    expect((await status(vmLease.id)).status).toBe('ACTIVE');
    expect((await pool(vmRes.id))?.hosts).toEqual(['fake-2']);

    t.clock.set(new Date('2030-01-03T12:00:00Z'));
    await t.settle();
    expect((await status(vmLease.id)).status).toBe('TERMINATED');
    // As Blazar's end: servers, flavor, group, aggregate, inventory and class gone.
    expect(await gone(admin, server.id)).toBe(true);
    expect((await novaAs(admin, 'GET', `/flavors/${vmRes.id}`)).flavor).toBeUndefined();
    expect(
      (await novaAs(admin, 'GET', `/os-server-groups/${groupId}`)).server_group,
    ).toBeUndefined();
    expect(await pool(vmRes.id)).toBeUndefined();
    expect(await reservationUnits(admin, vmRes.id, 'fake-2')).toBe(0);
    expect(await classExists(admin, vmRes.id)).toBe(false);
    expect((await pool(FREEPOOL))?.hosts.sort()).toEqual(['fake-1', 'fake-2', 'fake-3']);

    // The pending one starts with Blazar's group, flavor and aggregate, not new ones.
    t.clock.set(new Date('2030-01-05T00:00:00Z'));
    await t.settle();
    expect((await status(laterLease.id)).reservations[0]).toMatchObject({
      status: 'active',
      server_group_id: laterGroupId,
      aggregate_id: ids.get(laterRes.id),
    });
    expect((await pool(laterRes.id))?.hosts.sort()).toEqual(['fake-1', 'fake-3']);
    expect((await pool(laterRes.id))?.id).toBe(ids.get(laterRes.id));
    const access = (await novaAs(admin, 'GET', `/flavors/${laterRes.id}/os-flavor-access`))
      .flavor_access as { tenant_id: string }[];
    expect(access.map((a) => a.tenant_id)).toEqual([p1.projectId]);
    expect(await reservationUnits(admin, laterRes.id, 'fake-1')).toBe(1);
    expect(await reservationUnits(admin, laterRes.id, 'fake-3')).toBe(1);
    const groups = (await novaAs(admin, 'GET', '/os-server-groups?all_projects=True'))
      .server_groups as { name: string }[];
    expect(groups.filter((g) => g.name === `reservation:${laterRes.id}`)).toHaveLength(1);

    t.clock.set(new Date('2030-01-08T00:00:00Z'));
    await t.settle();
    expect((await status(laterLease.id)).status).toBe('TERMINATED');
    expect((await novaAs(admin, 'GET', `/flavors/${laterRes.id}`)).flavor).toBeUndefined();
    expect(
      (await novaAs(admin, 'GET', `/os-server-groups/${laterGroupId}`)).server_group,
    ).toBeUndefined();
    expect(await pool(laterRes.id)).toBeUndefined();
    expect(await reservationUnits(admin, laterRes.id, 'fake-1')).toBe(0);
    expect(await classExists(admin, laterRes.id)).toBe(false);
  });
});
