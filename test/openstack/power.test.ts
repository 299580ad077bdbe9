/**
 * The power plan through the real Nova (../shared/openstack, fake compute hosts): a host
 * the plan powers off has its nova-compute service disabled with Climate's reason (and
 * still counts as up for Climate's maintenance), and is enabled again before a lease on
 * it starts. Run with `npm run test:openstack`.
 */
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { KeystoneClient } from '../../src/compute/keystone.client.js';
import { NovaDriver } from '../../src/compute/nova.driver.js';
import { CLIMATE_DISABLE_PREFIX } from '../../src/compute/compute-driver.js';
import { Maintenance } from '../../src/events/maintenance.service.js';
import { PowerService } from '../../src/power/power.service.js';
import { startApp, TestApp } from '../support/app.js';
import { createTestDatabase, TestDatabase } from '../support/database.js';
import { computeService, computeServiceRow, KS, NOVA, novaAs, token } from './support.js';

jest.setTimeout(240_000);

const MINUTE = 60_000;
const HOST = 'fake-3';

describe('the power plan with COMPUTE_DRIVER=nova', () => {
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
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
    // Whatever an earlier run left: the host starts enabled.
    await computeService(admin, HOST, true);
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: {
        PLUGINS: 'physical:host',
        AUTH_STRATEGY: 'keystone',
        COMPUTE_DRIVER: 'nova',
        KEYSTONE_URL: KS,
        NOVA_URL: NOVA,
        SERVICE_USERNAME: 'admin',
        SERVICE_PASSWORD: 'adminpass',
        SERVICE_PROJECT: 'admin',
        POWER_PLAN: 'on',
        POWER_OFF_IDLE_MINUTES: '30',
        POWER_BOOT_SECONDS: '60',
        PROVISIONING_LEAD_MINUTES: '5',
      },
    });
    t.clock.set(new Date());
    http = request(t.app.getHttpServer());
  });
  afterAll(async () => {
    if (admin !== undefined) await computeService(admin, HOST, true);
    await t?.close();
    await db?.drop();
  });

  const service = () => computeServiceRow(admin, HOST);

  const aggregate = async (name: string) =>
    (
      (await novaAs(admin, 'GET', '/os-aggregates')).aggregates as {
        name: string;
        hosts: string[];
        metadata: Record<string, string>;
      }[]
    ).find((a) => a.name === name);

  /** Moves Climate's clock on a minute at a time, running the power plan and the manager. */
  const minutes = async (n: number, each: () => Promise<void> = async () => {}) => {
    for (let i = 0; i < n; i++) {
      t.clock.advance(MINUTE);
      await t.app.get(PowerService).run();
      await t.settle();
      await each();
    }
  };

  it('should disable a powered-off host in Nova with its reason and enable it before a lease on it starts', async () => {
    const created = await http.post('/v1/os-hosts').set('X-Auth-Token', admin).send({ name: HOST });
    expect(created.status).toBe(201);
    const hostId = created.body.host.id as string;

    // Idle past POWER_OFF_IDLE_MINUTES: switched off, i.e. its service disabled by Climate.
    await minutes(31);
    const plan = (await http.get('/v1/power-plan').set('X-Auth-Token', admin).expect(200)).body;
    expect(plan.hosts).toEqual([
      expect.objectContaining({ hypervisor_hostname: HOST, power_state: 'off' }),
    ]);
    const off = await service();
    expect(off.status).toBe('disabled');
    expect(off.disabled_reason?.startsWith(CLIMATE_DISABLE_PREFIX)).toBe(true);
    // Climate's maintenance does not take a host it disabled for a failed one.
    await t.app.get(Maintenance).run();
    const host = (await http.get(`/v1/os-hosts/${hostId}`).set('X-Auth-Token', admin).expect(200))
      .body.host;
    expect(host.reservable).toBe(true);

    // A lease on it an hour ahead: enabled again boot (1) + lead (5) minutes before it.
    const start = new Date(t.clock.now().getTime() + 60 * MINUTE);
    const lease = await http
      .post('/v1/leases')
      .set('X-Auth-Token', admin)
      .send({
        name: 'power-nova',
        start_date: start.toISOString(),
        end_date: new Date(start.getTime() + 30 * MINUTE).toISOString(),
        reservations: [
          {
            resource_type: 'physical:host',
            min: 1,
            max: 1,
            hypervisor_properties: `["==", "$hypervisor_hostname", "${HOST}"]`,
            resource_properties: '',
          },
        ],
      })
      .expect(201);
    const reservationId = lease.body.lease.reservations[0].id as string;
    await minutes(50);
    expect((await service()).status).toBe('disabled');
    let enabledAt: number | null = null;
    await minutes(9, async () => {
      if (enabledAt === null && (await service()).status === 'enabled') {
        enabledAt = t.clock.now().getTime();
      }
    });
    expect(enabledAt).toBe(start.getTime() - 6 * MINUTE);
    // Prepared at the lead time: in its own aggregate in Nova, nobody let in yet.
    const prepared = await aggregate(reservationId);
    expect(prepared?.hosts).toEqual([HOST]);
    expect(prepared?.metadata['blazar:owner']).toBeUndefined();

    await minutes(1);
    const started = (
      await http.get(`/v1/leases/${lease.body.lease.id}`).set('X-Auth-Token', admin).expect(200)
    ).body.lease;
    expect(started.status).toBe('ACTIVE');
    expect((await service()).status).toBe('enabled');
    expect((await aggregate(reservationId))?.metadata['blazar:owner']).toBe(
      lease.body.lease.project_id,
    );

    // After the lease, off again; marked always on, back on.
    await minutes(31);
    expect((await service()).status).toBe('disabled');
    await http
      .put(`/v1/os-hosts/${hostId}/power`)
      .set('X-Auth-Token', admin)
      .send({ always_on: true })
      .expect(200);
    await minutes(1);
    expect((await service()).status).toBe('enabled');
  });
});
