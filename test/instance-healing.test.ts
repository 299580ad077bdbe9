import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, healthFlags, hostReservation, slotReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { Maintenance } from '../src/events/maintenance.service.js';

const HOUR = 3600_000;
const env = { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' };

/** Hosts of 8 vCPU / 16 GB / 100 GB: two 4-vCPU slots each at ratio 1. */
const slot = (zone: string, values: Record<string, unknown> = {}) =>
  slotReservation(zone, { amount: 2, ...values });

describe('instance slots on failing and leaving hosts', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();
  const tenant = { 'X-Project-Id': 'tenant-h', 'X-User-Id': 'u', 'X-Roles': 'member' };

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env, driver });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** A lease of one instance reservation, starting now (and started) or later. */
  async function lease(reservation: Record<string, unknown>, startsIn = 0) {
    const start = t.clock.now().getTime() + startsIn;
    const created = await t.http
      .post('/v1/leases')
      .set(tenant)
      .send({
        name: `l-${start}-${Math.random()}`,
        start_date: startsIn === 0 ? 'now' : new Date(start).toISOString(),
        end_date: new Date(start + 2 * HOUR).toISOString(),
        reservations: [reservation],
      })
      .expect(201);
    await t.settle();
    return {
      leaseId: created.body.lease.id as string,
      rid: created.body.lease.reservations[0].id as string,
    };
  }

  async function slotsOf(rid: string): Promise<Record<string, number>> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(
        `SELECT h.hypervisor_hostname AS host, a.slots FROM instance_allocations a
           JOIN hosts h ON h.id = a.host_id WHERE a.reservation_id = $1 ORDER BY 1`,
        [rid],
      );
      return Object.fromEntries(rows.map((r) => [r.host, r.slots]));
    } finally {
      await client.end();
    }
  }

  async function hostId(name: string): Promise<string> {
    const hosts = (await t.http.get('/v1/os-hosts').expect(200)).body.hosts as {
      id: string;
      hypervisor_hostname: string;
    }[];
    return hosts.find((h) => h.hypervisor_hostname === name)?.id as string;
  }

  const setReservable = async (name: string, reservable: boolean) =>
    t.http
      .put(`/v1/os-hosts/${await hostId(name)}`)
      .send({ reservable })
      .expect(200);

  const flags = (leaseId: string) => healthFlags(t.http, leaseId);

  it('should move the slots of a failed host, follow in the pool, and flag what cannot move', async () => {
    t.clock.set(new Date('2042-01-01T00:00:00Z'));
    await addHosts(t.http, ['sh-1', 'sh-2'], () => ({ zone: 'sh' }));
    const { leaseId, rid } = await lease(slot('sh'));
    expect(await slotsOf(rid)).toEqual({ 'sh-1': 2 });
    expect(driver.pools.get(rid)?.hosts).toEqual(new Set(['sh-1']));
    const claim = await t.http
      .post(`/v1/reservations/${rid}/claims`)
      .set(tenant)
      .send({ server_id: 'vm-on-sh-1' })
      .expect(201);
    expect(claim.body.claim.host).toBe('sh-1');

    // sh-1 fails: both slots go to sh-2, the aggregate follows, the claim there goes
    await setReservable('sh-1', false);
    expect(await slotsOf(rid)).toEqual({ 'sh-2': 2 });
    expect(driver.pools.get(rid)?.hosts).toEqual(new Set(['sh-2']));
    // the size in the compute service moves with them
    expect(Object.fromEntries(driver.sizes.get(rid) ?? [])).toEqual({ 'sh-2': 2 });
    expect(await flags(leaseId)).toEqual({ degraded: false, missing: false, changed: true });
    const shown = (await t.http.get(`/v1/leases/${leaseId}`).set(tenant)).body.lease;
    expect(shown.reservations[0].claims).toEqual([]);

    // sh-2 fails too, with nowhere to go: the slots stay, flagged
    await setReservable('sh-2', false);
    expect(await slotsOf(rid)).toEqual({ 'sh-2': 2 });
    expect(await flags(leaseId)).toMatchObject({ degraded: true, missing: true });

    // sh-1 comes back: the periodic heal moves them there and clears the flags
    await setReservable('sh-1', true);
    await t.app.get(Maintenance).run();
    expect(await slotsOf(rid)).toEqual({ 'sh-1': 2 });
    expect(driver.pools.get(rid)?.hosts).toEqual(new Set(['sh-1']));
    expect(await flags(leaseId)).toMatchObject({ degraded: false, missing: false });
  });

  it('should keep affinity when slots move: apart stays apart, together stays together', async () => {
    t.clock.set(new Date('2042-02-01T00:00:00Z'));
    await addHosts(t.http, ['af-1', 'af-2', 'af-3', 'af-4'], () => ({ zone: 'af' }));
    const apart = await lease(slot('af', { affinity: false }));
    const together = await lease(slot('af', { affinity: true }));
    expect(await slotsOf(apart.rid)).toEqual({ 'af-1': 1, 'af-2': 1 });
    expect(await slotsOf(together.rid)).toEqual({ 'af-3': 2 });

    // af-2 fails: af-1 has room but already holds one of the spread slots, so af-4
    await setReservable('af-2', false);
    expect(await slotsOf(apart.rid)).toEqual({ 'af-1': 1, 'af-4': 1 });

    // af-3 fails: no host has two slots free together any more
    await setReservable('af-3', false);
    expect(await slotsOf(together.rid)).toEqual({ 'af-3': 2 });
    expect(await flags(together.leaseId)).toMatchObject({ missing: true, degraded: true });
    // af-2 is back: the periodic heal moves both slots there, together
    await setReservable('af-2', true);
    await t.app.get(Maintenance).run();
    expect(await slotsOf(together.rid)).toEqual({ 'af-2': 2 });
    expect(driver.pools.get(together.rid)?.hosts).toEqual(new Set(['af-2']));
    expect(await flags(together.leaseId)).toMatchObject({ missing: false, degraded: false });
  });

  it('should bring the aggregate in line on a later heal when the compute service failed the first time', async () => {
    t.clock.set(new Date('2042-02-15T00:00:00Z'));
    await addHosts(t.http, ['rs-1', 'rs-2'], () => ({ zone: 'rs' }));
    const { leaseId, rid } = await lease(slot('rs'));
    expect(driver.pools.get(rid)?.hosts).toEqual(new Set(['rs-1']));
    driver.failNext.add('addHost');
    await setReservable('rs-1', false);
    // Climate moved the slots; the compute service did not follow yet
    expect(await slotsOf(rid)).toEqual({ 'rs-2': 2 });
    expect(driver.pools.get(rid)?.hosts).toEqual(new Set());
    await t.app.get(Maintenance).run();
    expect(driver.pools.get(rid)?.hosts).toEqual(new Set(['rs-2']));
    expect(await flags(leaseId)).toMatchObject({ missing: false, changed: true });
  });

  it('should keep a host with claimed slots out of the shared pool', async () => {
    t.clock.set(new Date('2042-02-20T00:00:00Z'));
    await addHosts(t.http, ['cl-1', 'cl-2'], () => ({ zone: 'cl' }));
    const { rid } = await lease(slot('cl'));
    await t.http
      .post(`/v1/reservations/${rid}/claims`)
      .set(tenant)
      .send({ server_id: 'vm-cl' })
      .expect(201);
    const refused = await t.http
      .put(`/v1/os-hosts/${await hostId('cl-1')}/pool`)
      .send({ pool: 'shared' })
      .expect(409);
    expect(refused.body).toMatchObject({ error_type: 'HostInUse' });
    expect(refused.body.error_message).toContain(rid);
    expect(await slotsOf(rid)).toEqual({ 'cl-1': 2 });
    const shown = (await t.http.get(`/v1/os-hosts/${await hostId('cl-1')}`)).body.host;
    expect(shown.pool).toBe('freepool');
  });

  it('should not share a host at the end of a host lease when slots are reserved on it later', async () => {
    t.clock.set(new Date('2042-02-25T00:00:00Z'));
    await addHosts(t.http, ['os-1'], () => ({ zone: 'os' }));
    const whole = await t.http
      .post('/v1/leases')
      .send({
        name: 'os-whole',
        start_date: 'now',
        end_date: new Date(t.clock.now().getTime() + HOUR).toISOString(),
        reservations: [
          hostReservation({ resource_properties: '["==", "$zone", "os"]', on_end: 'shared' }),
        ],
      })
      .expect(201);
    await t.settle();
    const later = await lease(slot('os'), 2 * HOUR);
    t.clock.advance(HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${whole.body.lease.id}`)).body.lease.status).toBe(
      'TERMINATED',
    );
    expect((await t.http.get(`/v1/os-hosts/${await hostId('os-1')}`)).body.host.pool).toBe(
      'freepool',
    );
    expect(await slotsOf(later.rid)).toEqual({ 'os-1': 2 });
  });

  it('should refuse to delete a host with slots and move its slots when it joins the shared pool', async () => {
    t.clock.set(new Date('2042-03-01T00:00:00Z'));
    await addHosts(t.http, ['mv-1', 'mv-2'], () => ({ zone: 'mv' }));
    const { rid } = await lease(slot('mv'), 24 * HOUR);
    expect(await slotsOf(rid)).toEqual({ 'mv-1': 2 });
    const refused = await t.http.delete(`/v1/os-hosts/${await hostId('mv-1')}`).expect(409);
    expect(refused.body.error_type).toBe('CantDeleteHost');

    await t.http
      .put(`/v1/os-hosts/${await hostId('mv-1')}/pool`)
      .send({ pool: 'shared' })
      .expect(200);
    expect(await slotsOf(rid)).toEqual({ 'mv-2': 2 });
    // nowhere left for them: mv-2 stays in the reservation pool
    const stuck = await t.http
      .put(`/v1/os-hosts/${await hostId('mv-2')}/pool`)
      .send({ pool: 'shared' })
      .expect(409);
    expect(stuck.body.error_type).toBe('HostInUse');
    expect(await slotsOf(rid)).toEqual({ 'mv-2': 2 });
  });

  it('should refuse to change a capability that slots reserved on the host depend on', async () => {
    t.clock.set(new Date('2042-03-15T00:00:00Z'));
    await addHosts(t.http, ['cap-1'], () => ({ zone: 'capz' }));
    await lease(slot('capz', { amount: 1 }), 24 * HOUR);
    const refused = await t.http
      .put(`/v1/os-hosts/${await hostId('cap-1')}`)
      .send({ zone: 'elsewhere' })
      .expect(409);
    expect(refused.body.error_type).toBe('CantAddExtraCapability');
    expect((await t.http.get(`/v1/os-hosts/${await hostId('cap-1')}`)).body.host.zone).toBe('capz');
  });

  it('should refuse to shrink a host under the instance slots it carries', async () => {
    t.clock.set(new Date('2042-03-15T00:00:00Z'));
    await addHosts(t.http, ['shr-1'], () => ({ zone: 'shr' }));
    // two 4-vCPU, 4 GB slots on an 8-vCPU, 16 GB host, the second one later
    await lease(slot('shr', { amount: 1 }));
    await lease(slot('shr', { amount: 1 }), 24 * HOUR);
    const id = await hostId('shr-1');
    const refused = await t.http.put(`/v1/os-hosts/${id}`).send({ vcpus: 2 }).expect(409);
    expect(refused.body).toMatchObject({ error_type: 'HostInUse' });
    expect(refused.body.error_message).toContain('vcpus');
    expect((await t.http.get(`/v1/os-hosts/${id}`)).body.host.vcpus).toBe(8);
    // the two slots never run at once: one slot's worth must stay, more may go
    await t.http.put(`/v1/os-hosts/${id}`).send({ memory_mb: 4096 }).expect(200);
    await t.http.put(`/v1/os-hosts/${id}`).send({ memory_mb: 2048 }).expect(409);
  });

  it('should count hosts carrying slots as taken in the availability search and the capacity plan', async () => {
    t.clock.set(new Date('2042-04-01T00:00:00Z'));
    await addHosts(t.http, ['av-1', 'av-2'], () => ({ zone: 'av' }));
    const cap = encodeURIComponent('["==", "$zone", "av"]');
    await t.http
      .post('/v1/leases')
      .set(tenant)
      .send({
        name: 'av',
        start_date: '2042-04-02 00:00',
        end_date: '2042-04-03 00:00',
        reservations: [slot('av', { amount: 1 })],
      })
      .expect(201);
    const avail = await t.http
      .get(
        `/v1/os-hosts/availability?count=2&duration=12h&start=2042-04-01%2018:00&resource_properties=${cap}`,
      )
      .expect(200);
    expect(avail.body.availability[0]).toMatchObject({
      start_date: '2042-04-03T00:00:00.000000',
      free_hosts: 2,
    });
    const plan = await t.http
      .get(
        `/v1/os-hosts/capacity?start=2042-04-01%2000:00&end=2042-04-04%2000:00&step=1d&resource_properties=${cap}`,
      )
      .expect(200);
    expect(plan.body.capacity.map((c: { reserved: number }) => c.reserved)).toEqual([0, 1, 0]);
    // and a whole-host reservation over the slot's day takes the other host only
    await t.http
      .post('/v1/leases')
      .set(tenant)
      .send({
        name: 'av-whole',
        start_date: '2042-04-02 00:00',
        end_date: '2042-04-03 00:00',
        reservations: [
          hostReservation({ min: 2, max: 2, resource_properties: '["==", "$zone", "av"]' }),
        ],
      })
      .expect(409);
  });
});
