import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { Maintenance } from '../src/events/maintenance.service.js';

const HOUR = 3600_000;

describe('what the physical:host plugin asks of the compute driver', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: { PLUGINS: 'physical:host', RECYCLE_GRACE_MINUTES: '30' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function lease(zone: string, extra: Record<string, unknown> = {}) {
    const res = await t.http
      .post('/v1/leases')
      .set({ 'X-Project-Id': 'tenant', 'X-Roles': 'member' })
      .send({
        name: zone,
        start_date: 'now',
        end_date: new Date(t.clock.now().getTime() + 2 * HOUR).toISOString(),
        reservations: [
          hostReservation({ resource_properties: `["==", "$zone", "${zone}"]`, ...extra }),
        ],
      })
      .expect(201);
    return {
      id: res.body.lease.id as string,
      reservationId: res.body.lease.reservations[0].id as string,
    };
  }

  it('should mirror the pools, purge servers and snapshot as the lease runs', async () => {
    t.clock.set(new Date('2040-01-01T00:00:00Z'));
    await addHosts(t.http, ['nd-1'], () => ({ zone: 'nd' }));
    expect(driver.poolOf('nd-1')).toEqual(['freepool']);
    driver.servers.set('nd-1', [
      { id: 'preemptible', name: 'old', projectId: 'x', preemptible: true },
    ]);
    const { id, reservationId } = await lease('nd', { before_end: 'snapshot' });

    await t.settle();
    expect(driver.poolOf('nd-1')).toEqual([reservationId]);
    expect(await driver.serversOnHost('nd-1')).toEqual([]); // the preemptible server went
    expect(driver.pools.get(reservationId)?.spec).toEqual({
      name: reservationId,
      availabilityZone: `blazar_${reservationId}`,
      metadata: { 'blazar:owner': 'tenant', filter_tenant_id: 'tenant' },
    });
    // the tenant's server is snapshotted before the end and removed at the end
    driver.servers.set('nd-1', [{ id: 'vm-1', name: 'web', projectId: 'tenant' }]);
    t.clock.advance(HOUR + 1000);
    await t.settle();
    expect(driver.snapshots).toEqual(['vm-1:reserved_web']);
    t.clock.advance(HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('TERMINATED');
    expect(await driver.serversOnHost('nd-1')).toEqual([]);
    expect(driver.poolOf('nd-1')).toEqual(['freepool']);
    expect(driver.pools.has(reservationId)).toBe(false);
  });

  it('should never remove an ordinary server of another project when its host is reserved', async () => {
    t.clock.set(new Date('2040-01-15T00:00:00Z'));
    await addHosts(t.http, ['keep-1'], () => ({ zone: 'keep' }));
    driver.servers.set('keep-1', [{ id: 'theirs', name: 'web', projectId: 'other' }]);
    const { id, reservationId } = await lease('keep');
    await t.settle();
    // the start waits: the server stays, the host does not join the reservation yet
    expect(await driver.serversOnHost('keep-1')).toEqual([
      { id: 'theirs', name: 'web', projectId: 'other' },
    ]);
    expect(driver.poolOf('keep-1')).not.toContain(reservationId);
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('PENDING');
    // once its owner has moved it, the retried start goes through
    driver.servers.set('keep-1', []);
    t.clock.advance(60_000);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('ACTIVE');
    expect(driver.poolOf('keep-1')).toEqual([reservationId]);
  });

  it('should snapshot each server once when a before-end action is retried', async () => {
    t.clock.set(new Date('2040-01-20T00:00:00Z'));
    await addHosts(t.http, ['snap-1'], () => ({ zone: 'snap' }));
    const { id } = await lease('snap', { before_end: 'snapshot' });
    await t.settle();
    driver.servers.set('snap-1', [
      { id: 'vm-a', name: 'a', projectId: 'tenant' },
      { id: 'vm-b', name: 'b', projectId: 'tenant' },
    ]);
    driver.snapshots.length = 0;
    const original = driver.snapshotServer.bind(driver);
    let failures = 1;
    driver.snapshotServer = async (serverId, name) => {
      // the compute service fails on the second server, once
      if (serverId === 'vm-b' && failures-- > 0) throw new Error('image service unavailable');
      return original(serverId, name);
    };
    t.clock.advance(HOUR + 1000);
    await t.settle();
    t.clock.advance(60_000);
    await t.settle();
    driver.snapshotServer = original;
    expect([...driver.snapshots].sort()).toEqual(['vm-a:reserved_a', 'vm-b:reserved_b']);
    const events = (await t.http.get(`/v1/leases/${id}`)).body.lease.events as {
      event_type: string;
      status: string;
    }[];
    expect(events.find((e) => e.event_type === 'before_end_lease')?.status).toBe('DONE');
  });

  it('should hold a recycled host until its servers are gone or the grace period ends', async () => {
    t.clock.set(new Date('2040-02-01T00:00:00Z'));
    await addHosts(t.http, ['rcy-1'], () => ({ zone: 'rcy' }));
    const { id } = await lease('rcy', { on_end: 'recycle' });
    await t.settle();
    driver.servers.set('rcy-1', [{ id: 'vm-2', name: 'db', projectId: 'tenant' }]);
    t.clock.advance(2 * HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('TERMINATED');
    expect(driver.poolOf('rcy-1')).toEqual(['recycle']);
    // Blazar's filter refuses hosts in a zone with its prefix: no plain boots on them
    expect(driver.pools.get('recycle')?.spec?.availabilityZone).toBe('blazar_recycle');
    const maintenance = t.app.get(Maintenance);
    await maintenance.run();
    expect(driver.poolOf('rcy-1')).toEqual(['recycle']);
    t.clock.advance(31 * 60_000);
    await maintenance.run();
    expect(driver.poolOf('rcy-1')).toEqual(['freepool']);
    expect(await driver.serversOnHost('rcy-1')).toEqual([]);
  });

  it('should take a host the driver reports down out of service and heal, then put it back', async () => {
    t.clock.set(new Date('2040-03-01T00:00:00Z'));
    await addHosts(t.http, ['dn-1', 'dn-2'], () => ({ zone: 'dn' }));
    const { reservationId } = await lease('dn');
    await t.settle();
    expect(driver.poolOf('dn-1')).toEqual([reservationId]);
    driver.states = new Map([
      ['dn-1', false],
      ['dn-2', true],
    ]);
    await t.app.get(Maintenance).run();
    const hosts = (await t.http.get('/v1/os-hosts')).body.hosts as {
      hypervisor_hostname: string;
      reservable: boolean;
    }[];
    expect(hosts.find((h) => h.hypervisor_hostname === 'dn-1')?.reservable).toBe(false);
    expect(driver.poolOf('dn-2')).toEqual([reservationId]);
    expect(driver.poolOf('dn-1')).toEqual(['freepool']);

    driver.states = new Map([
      ['dn-1', true],
      ['dn-2', true],
    ]);
    await t.app.get(Maintenance).run();
    const after = (await t.http.get('/v1/os-hosts')).body.hosts as {
      hypervisor_hostname: string;
      reservable: boolean;
    }[];
    expect(after.find((h) => h.hypervisor_hostname === 'dn-1')?.reservable).toBe(true);
    driver.states = null;
  });

  it('should keep a host an admin took out of service out when the driver reports it down and up', async () => {
    await addHosts(t.http, ['adm-1'], () => ({ zone: 'adm' }));
    const hosts = (await t.http.get('/v1/os-hosts')).body.hosts as {
      id: string;
      hypervisor_hostname: string;
      reservable: boolean;
    }[];
    const id = hosts.find((h) => h.hypervisor_hostname === 'adm-1')?.id;
    await t.http.put(`/v1/os-hosts/${id}`).send({ reservable: false }).expect(200);
    const maintenance = t.app.get(Maintenance);
    driver.states = new Map([['adm-1', false]]);
    await maintenance.run();
    driver.states = new Map([['adm-1', true]]);
    await maintenance.run();
    driver.states = null;
    expect((await t.http.get(`/v1/os-hosts/${id}`)).body.host.reservable).toBe(false);
  });

  it('should let a start wait, without using up its attempts, for a host whose end is slow', async () => {
    t.clock.set(new Date('2040-05-01T00:00:00Z'));
    await addHosts(t.http, ['slow-1'], () => ({ zone: 'slow' }));
    const first = await lease('slow');
    await t.settle();
    const second = await t.http
      .post('/v1/leases')
      .set({ 'X-Project-Id': 'tenant', 'X-Roles': 'member' })
      .send({
        name: 'next',
        start_date: new Date(t.clock.now().getTime() + 2 * HOUR + 60_000).toISOString(),
        end_date: new Date(t.clock.now().getTime() + 4 * HOUR).toISOString(),
        reservations: [hostReservation({ resource_properties: '["==", "$zone", "slow"]' })],
      })
      .expect(201);
    // the first lease's end hangs in the compute service
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const original = driver.serversOnHost.bind(driver);
    driver.serversOnHost = async (host) => {
      if (host === 'slow-1') await gate;
      return original(host);
    };
    const client = await connect(db.url);
    const startEvent = async () =>
      (
        await client.query(
          `SELECT status, attempts, last_error FROM events WHERE lease_id = $1 AND event_type = 'start_lease'`,
          [second.body.lease.id],
        )
      ).rows[0];
    try {
      // the first lease's before-end passes; its end begins and hangs; the next lease's
      // start comes due a minute later, in a batch of its own
      t.clock.advance(HOUR + 1000);
      await t.settle();
      t.clock.advance(HOUR);
      await t.manager.tick();
      // more retries than EVENT_MAX_ATTEMPTS, each after its wait (5 polls), all within
      // the hung end's claim
      for (let i = 0; i < 10; i++) {
        t.clock.advance(6_000);
        await t.manager.tick();
        for (let j = 0; j < 250 && (await startEvent()).status === 'IN_PROGRESS'; j++) {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const waiting = await startEvent();
      expect(waiting.status).toBe('UNDONE');
      expect(waiting.attempts).toBe(0);
      expect(waiting.last_error).toContain('still in pool');
      expect((await t.http.get(`/v1/leases/${second.body.lease.id}`)).body.lease.status).toBe(
        'PENDING',
      );
    } finally {
      driver.serversOnHost = original;
      release();
      await client.end();
    }
    await t.settle();
    t.clock.advance(60_000);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${first.id}`)).body.lease.status).toBe('TERMINATED');
    expect((await t.http.get(`/v1/leases/${second.body.lease.id}`)).body.lease.status).toBe(
      'ACTIVE',
    );
  }, 60_000);

  it('should run an interrupted start again without harm', async () => {
    t.clock.set(new Date('2040-04-01T00:00:00Z'));
    await addHosts(t.http, ['re-1'], () => ({ zone: 're' }));
    const { id, reservationId } = await lease('re');
    const original = driver.addHost.bind(driver);
    let failures = 1;
    driver.addHost = async (pool, host) => {
      // dies half-way: Climate's record is written, the driver call fails
      if (pool === reservationId && failures-- > 0) throw new Error('compute API unavailable');
      return original(pool, host);
    };
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('PENDING');
    t.clock.advance(60_000);
    await t.settle();
    driver.addHost = original;
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('ACTIVE');
    expect(driver.poolOf('re-1')).toEqual([reservationId]);
  });
});
