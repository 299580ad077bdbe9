/**
 * Issue 25 item 3 against the real Keystone and Nova: a reservation's Nova objects exist
 * once its lease is created (as Blazar makes them), Blazar-tempest's boot with the group
 * from the create's answer works, and a create while Nova is unreachable is a 503 that
 * leaves nothing, in Climate or in Nova. Run with `npm run test:openstack`.
 */
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { connect, createTestDatabase, TestDatabase } from '../support/database.js';
import { startApp, TestApp } from '../support/app.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { KeystoneClient } from '../../src/compute/keystone.client.js';
import { NovaDriver } from '../../src/compute/nova.driver.js';
import {
  boot,
  CLIMATE_PORT,
  gone,
  keystone,
  KS,
  NOVA,
  novaAs,
  tenant,
  token,
  type Tenant,
} from './support.js';

jest.setTimeout(240_000);

const HOUR = 3_600_000;

describe("Blazar's Nova objects made with the lease, in the real Nova", () => {
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
  let alice: Tenant;
  const nova = new URL(NOVA);
  // Nova as Climate reaches it: cut to make it unreachable.
  const proxy = new TcpProxy(nova.hostname, Number(nova.port));

  beforeAll(async () => {
    await proxy.listen();
    db = await createTestDatabase();
    admin = (await token('admin', 'adminpass', 'admin')).token;
    alice = await tenant(admin, 'climate-alice');
    const novaUrl = `http://127.0.0.1:${proxy.port}${nova.pathname}`;
    const keystoneClient = new KeystoneClient({
      url: KS,
      username: 'admin',
      password: 'adminpass',
      project: 'admin',
      domain: 'Default',
    });
    t = await startApp({
      databaseUrl: db.url,
      driver: new NovaDriver(keystoneClient, novaUrl, null, 90_000),
      env: {
        PLUGINS: 'physical:host,virtual:instance',
        AUTH_STRATEGY: 'keystone',
        COMPUTE_DRIVER: 'nova',
        KEYSTONE_URL: KS,
        NOVA_URL: novaUrl,
        SERVICE_USERNAME: 'admin',
        SERVICE_PASSWORD: 'adminpass',
        SERVICE_PROJECT: 'admin',
      },
    });
    // nova-scheduler's filter asks this Climate
    await t.app.listen(CLIMATE_PORT, '127.0.0.1');
    t.clock.set(new Date());
    http = request(t.app.getHttpServer());
    for (const name of ['fake-1', 'fake-2', 'fake-3']) {
      const res = await http.post('/v1/os-hosts').set('X-Auth-Token', admin).send({ name });
      expect(res.status).toBe(201);
    }
  });
  afterAll(async () => {
    // the hosts leave Climate (and its freepool) as they came
    const hosts = (await http.get('/v1/os-hosts').set('X-Auth-Token', admin)).body.hosts as {
      id: string;
    }[];
    for (const h of hosts ?? [])
      await http.delete(`/v1/os-hosts/${h.id}`).set('X-Auth-Token', admin);
    await t?.close();
    await proxy.cut();
    await db?.drop();
  });

  const create = (name: string, start: string, reservation: Record<string, unknown>) =>
    http
      .post('/v1/leases')
      .set('X-Auth-Token', alice.token)
      .send({
        name,
        start_date: start,
        end_date: new Date(t.clock.now().getTime() + 2 * HOUR).toISOString(),
        reservations: [reservation],
      });

  const slots = (values: Record<string, unknown> = {}) => ({
    resource_type: 'virtual:instance',
    vcpus: 1,
    memory_mb: 256,
    disk_gb: 1,
    amount: 2,
    affinity: false,
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
  const status = async (path: string, who = admin) => {
    const res = await fetch(`${NOVA}${path}`, { headers: { 'X-Auth-Token': who } });
    await res.text();
    return res.status;
  };
  const flavorIds = async () =>
    ((await novaAs(admin, 'GET', '/flavors?is_public=None')).flavors as { id: string }[]).map(
      (f) => f.id,
    );
  const groupIds = async () =>
    (
      (await novaAs(admin, 'GET', '/os-server-groups?all_projects=True')).server_groups as {
        id: string;
      }[]
    ).map((g) => g.id);

  it("should answer the create with the group, flavor and aggregate Nova already has, and boot with the group from that answer (Blazar's tempest)", async () => {
    const res = await create('objects-now', 'now', slots()).expect(201);
    const r = res.body.lease.reservations[0];
    expect(r.flavor_id).toBe(r.id);
    expect(r.server_group_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof r.aggregate_id).toBe('number');
    // in Nova before the start: the tenant's group, the private flavor, the empty aggregate
    const group = (await novaAs(alice.token, 'GET', `/os-server-groups/${r.server_group_id}`))
      .server_group as { name: string; policy: string; project_id: string };
    expect(group).toMatchObject({
      name: `reservation:${r.id}`,
      policy: 'anti-affinity',
      project_id: alice.projectId,
    });
    const flavor = (await novaAs(admin, 'GET', `/flavors/${r.flavor_id}`)).flavor as Record<
      string,
      unknown
    >;
    expect(flavor).toMatchObject({
      name: `reservation:${r.id}`,
      vcpus: 1,
      ram: 256,
      disk: 1,
      'os-flavor-access:is_public': false,
    });
    const aggregate = (await aggregates()).find((a) => a.id === r.aggregate_id);
    expect(aggregate).toMatchObject({ name: r.id, hosts: [] });
    expect(aggregate?.metadata).toMatchObject({
      reservation: r.id,
      'blazar:owner': alice.projectId,
      affinity_id: r.server_group_id,
    });

    await t.settle();
    const started = (
      await http.get(`/v1/leases/${res.body.lease.id}`).set('X-Auth-Token', alice.token)
    ).body.lease;
    expect(started.status).toBe('ACTIVE');
    expect(started.reservations[0]).toMatchObject({
      server_group_id: r.server_group_id,
      aggregate_id: r.aggregate_id,
    });
    const servers = [];
    for (let i = 0; i < 2; i++) {
      servers.push(
        await boot(alice.token, admin, `objects-${i}`, r.flavor_id, { group: r.server_group_id }),
      );
    }
    expect(servers.map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE']);
    expect(new Set(servers.map((s) => s.host)).size).toBe(2);

    await http
      .delete(`/v1/leases/${res.body.lease.id}`)
      .set('X-Auth-Token', alice.token)
      .expect(204);
    for (const s of servers) expect(await gone(admin, s.id)).toBe(true);
    expect(await status(`/os-server-groups/${r.server_group_id}`)).toBe(404);
    expect(await status(`/flavors/${r.flavor_id}`)).toBe(404);
    expect((await aggregates()).find((a) => a.name === r.id)).toBeUndefined();
  });

  it("should make a host reservation's aggregate with the lease, and remove a pending lease's objects with it", async () => {
    const later = new Date(t.clock.now().getTime() + HOUR).toISOString();
    const host = await create('objects-host', later, {
      resource_type: 'physical:host',
      min: 1,
      max: 1,
      hypervisor_properties: '',
      resource_properties: '',
    }).expect(201);
    const id = host.body.lease.reservations[0].id as string;
    expect((await aggregates()).find((a) => a.name === id)).toMatchObject({
      availability_zone: `blazar_${id}`,
      hosts: [],
      metadata: expect.objectContaining({ 'blazar:owner': alice.projectId }),
    });
    const pending = await create('objects-later', later, slots({ affinity: true })).expect(201);
    const r = pending.body.lease.reservations[0];
    expect(await status(`/os-server-groups/${r.server_group_id}`)).toBe(200);
    for (const lease of [host, pending]) {
      await http
        .delete(`/v1/leases/${lease.body.lease.id}`)
        .set('X-Auth-Token', alice.token)
        .expect(204);
    }
    const names = (await aggregates()).map((a) => a.name);
    expect(names).not.toContain(id);
    expect(names).not.toContain(r.id);
    expect(await status(`/os-server-groups/${r.server_group_id}`)).toBe(404);
    expect(await status(`/flavors/${r.flavor_id}`)).toBe(404);
  });

  it('should answer 503 and leave nothing in Climate or Nova when Nova is unreachable', async () => {
    const client = await connect(db.url);
    const count = async () =>
      Number((await client.query(`SELECT count(*) FROM leases`)).rows[0].count);
    const trusts = async () =>
      (
        (await keystone(admin, 'GET', '/OS-TRUST/trusts')) as {
          trusts?: unknown[];
        }
      ).trusts?.length ?? 0;
    try {
      const before = {
        leases: await count(),
        aggregates: (await aggregates()).length,
        flavors: (await flavorIds()).length,
        groups: (await groupIds()).length,
        trusts: await trusts(),
      };
      await proxy.cut();
      for (const reservation of [
        slots(),
        {
          resource_type: 'physical:host',
          min: 1,
          max: 1,
          hypervisor_properties: '',
          resource_properties: '',
        },
      ]) {
        const res = await create('objects-down', 'now', reservation).expect(503);
        expect(res.body).toMatchObject({ error_code: 503, error_name: 503 });
      }
      await proxy.listen();
      expect({
        leases: await count(),
        aggregates: (await aggregates()).length,
        flavors: (await flavorIds()).length,
        groups: (await groupIds()).length,
        trusts: await trusts(),
      }).toEqual(before);
      // and with Nova back, the same create goes through
      const back = await create('objects-back', 'now', slots()).expect(201);
      await http
        .delete(`/v1/leases/${back.body.lease.id}`)
        .set('X-Auth-Token', alice.token)
        .expect(204);
    } finally {
      await client.end();
    }
  });

  it('should print what making the Nova objects adds to a create (median of 5, ms)', async () => {
    const later = () => new Date(t.clock.now().getTime() + HOUR).toISOString();
    const shapes: [string, Record<string, unknown> | null][] = [
      ['no reservation', null],
      [
        'physical:host',
        {
          resource_type: 'physical:host',
          min: 1,
          max: 1,
          hypervisor_properties: '',
          resource_properties: '',
        },
      ],
      ['virtual:instance, affinity null', slots({ affinity: null, amount: 1 })],
      ['virtual:instance, affinity false', slots({ amount: 1 })],
    ];
    const report: Record<string, number> = {};
    for (const [label, reservation] of shapes) {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const began = performance.now();
        const res = await http
          .post('/v1/leases')
          .set('X-Auth-Token', alice.token)
          .send({
            name: `cost-${i}`,
            start_date: later(),
            end_date: new Date(t.clock.now().getTime() + 2 * HOUR).toISOString(),
            reservations: reservation === null ? [] : [reservation],
          })
          .expect(201);
        times.push(performance.now() - began);
        await http
          .delete(`/v1/leases/${res.body.lease.id}`)
          .set('X-Auth-Token', alice.token)
          .expect(204);
      }
      report[label] = Math.round(times.sort((a, b) => a - b)[2]);
    }
    console.log(`create latency with the real Nova (median ms): ${JSON.stringify(report)}`);
    expect(Object.keys(report)).toHaveLength(shapes.length);
  });
});
