import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';
import { Maintenance } from '../src/events/maintenance.service.js';
import { MemoryDriver } from './support/memory-driver.js';
import { DataSource } from 'typeorm';
import { Lease } from '../src/model/lease.entity.js';
import { Reservation } from '../src/model/reservation.entity.js';
import { VirtualInstancePlugin } from '../src/plugins/virtual-instance/virtual-instance.plugin.js';

const HOUR = 3600_000;
const env = { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' };

/** Hosts of 8 vCPU / 16 GB / 100 GB: two 4-vCPU slots each at ratio 1. */
const slot = slotReservation;

describe('virtual:instance reservations', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env, driver });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const lease = (
    name: string,
    start: string,
    end: string,
    reservation: Record<string, unknown>,
    headers = {},
  ) =>
    t.http
      .post('/v1/leases')
      .set(headers)
      .send({ name, start_date: start, end_date: end, reservations: [reservation] });

  const leaseRow = (id: string) => t.app.get(DataSource).manager.findOneByOrFail(Lease, { id });

  async function slotsOf(reservationId: string): Promise<Record<string, number>> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(
        `SELECT h.hypervisor_hostname AS host, a.slots FROM instance_allocations a JOIN hosts h ON h.id = a.host_id
          WHERE a.reservation_id = $1 ORDER BY 1`,
        [reservationId],
      );
      return Object.fromEntries(rows.map((r) => [r.host, r.slots]));
    } finally {
      await client.end();
    }
  }

  it('should answer with the Blazar instance reservation shape', async () => {
    t.clock.set(new Date('2041-01-01T00:00:00Z'));
    await addHosts(t.http, ['shape-1'], () => ({ zone: 'shape' }));
    const res = await lease(
      'shape',
      '2041-01-02 00:00',
      '2041-01-03 00:00',
      slot('shape', { affinity: 'False' }),
    ).expect(201);
    const r = res.body.lease.reservations[0];
    expect(r).toMatchObject({
      resource_type: 'virtual:instance',
      vcpus: 4,
      memory_mb: 4096,
      disk_gb: 10,
      amount: 1,
      affinity: false,
      flavor_id: r.id,
      // made with the lease, as Blazar makes it (create-objects.test.ts has the rest)
      server_group_id: expect.any(String),
      aggregate_id: null,
      claims: [],
    });
    expect(driver.groups.get(r.server_group_id)?.policy).toBe('anti-affinity');
  });

  it('should fit slots exactly over time and refuse what would oversubscribe any instant', async () => {
    t.clock.set(new Date('2041-02-01T00:00:00Z'));
    await addHosts(t.http, ['time-1', 'time-2'], () => ({ zone: 'time' }));
    await lease('a', '2041-02-02 10:00', '2041-02-02 12:00', slot('time', { amount: 2 })).expect(
      201,
    );
    await lease('b', '2041-02-02 11:00', '2041-02-02 13:00', slot('time', { amount: 2 })).expect(
      201,
    );
    const c = await lease('c', '2041-02-02 11:30', '2041-02-02 12:00', slot('time')).expect(409);
    expect(c.body.error_type).toBe('NotEnoughHostsAvailable');
    await lease('d', '2041-02-02 12:00', '2041-02-02 13:00', slot('time', { amount: 2 })).expect(
      201,
    );
    await lease('e', '2041-02-02 12:30', '2041-02-02 12:45', slot('time')).expect(409);
    await lease('f', '2041-02-02 09:00', '2041-02-02 10:00', slot('time', { amount: 4 })).expect(
      201,
    );
    await lease('g', '2041-02-02 09:00', '2041-02-02 10:00', slot('time', { vcpus: 9 })).expect(
      409,
    );
  });

  it('should pack slots onto hosts already in use and honour affinity', async () => {
    t.clock.set(new Date('2041-03-01T00:00:00Z'));
    await addHosts(t.http, ['pk-1', 'pk-2', 'pk-3'], () => ({ zone: 'pk' }));
    const w = ['2041-03-02 00:00', '2041-03-03 00:00'] as const;
    const first = await lease('p1', ...w, slot('pk')).expect(201);
    const second = await lease('p2', ...w, slot('pk')).expect(201);
    const a = await slotsOf(first.body.lease.reservations[0].id);
    expect(await slotsOf(second.body.lease.reservations[0].id)).toEqual(a);
    // pk-1 is full; spreading two slots takes one on each of the others
    const apart = await lease('anti', ...w, slot('pk', { amount: 2, affinity: false })).expect(201);
    expect(Object.values(await slotsOf(apart.body.lease.reservations[0].id))).toEqual([1, 1]);
    // now no host has two free slots together, though two are free in all
    await lease('together', ...w, slot('pk', { amount: 2, affinity: true })).expect(409);
    const loose = await lease('loose', ...w, slot('pk', { amount: 2 })).expect(201);
    expect(Object.values(await slotsOf(loose.body.lease.reservations[0].id))).toEqual([1, 1]);
    const together = await lease(
      'together-later',
      '2041-03-04 00:00',
      '2041-03-05 00:00',
      slot('pk', { amount: 2, affinity: 'True' }),
    ).expect(201);
    expect(Object.values(await slotsOf(together.body.lease.reservations[0].id))).toEqual([2]);
  });

  it('should keep slots and whole-host reservations off each other', async () => {
    t.clock.set(new Date('2041-04-01T00:00:00Z'));
    await addHosts(t.http, ['mix-1', 'mix-2'], () => ({ zone: 'mix' }));
    const w = ['2041-04-02 00:00', '2041-04-03 00:00'] as const;
    const whole = await lease(
      'whole',
      ...w,
      hostReservation({ resource_properties: '["==", "$zone", "mix"]' }),
    ).expect(201);
    const slots = await lease('slots', ...w, slot('mix', { amount: 2 })).expect(201);
    const client = await connect(db.url);
    const wholeHost = (
      await client.query(`SELECT host_id FROM host_allocations WHERE reservation_id = $1`, [
        whole.body.lease.reservations[0].id,
      ])
    ).rows[0].host_id;
    const slotHosts = (
      await client.query(`SELECT host_id FROM instance_allocations WHERE reservation_id = $1`, [
        slots.body.lease.reservations[0].id,
      ])
    ).rows.map((r) => r.host_id);
    await client.end();
    expect(slotHosts).toEqual([expect.any(Number)]);
    expect(slotHosts).not.toContain(wholeHost);
    // no host left to reserve whole, and no room for more slots
    await lease(
      'whole-2',
      ...w,
      hostReservation({ resource_properties: '["==", "$zone", "mix"]' }),
    ).expect(409);
    await lease('slot-3', ...w, slot('mix')).expect(409);
  });

  it('should update before start freely, and only grow amount while active', async () => {
    t.clock.set(new Date('2041-05-01T00:00:00Z'));
    await addHosts(t.http, ['up-1', 'up-2'], () => ({ zone: 'up' }));
    const created = await lease('up', '2041-05-01 01:00', '2041-05-02 00:00', slot('up')).expect(
      201,
    );
    const id = created.body.lease.id;
    const rid = created.body.lease.reservations[0].id;
    const resized = await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: rid, vcpus: 8, memory_mb: 8192 }] })
      .expect(200);
    expect(resized.body.lease.reservations[0]).toMatchObject({
      vcpus: 8,
      memory_mb: 8192,
      amount: 1,
    });
    await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: rid, amount: 3 }] })
      .expect(409);
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.reservations[0].amount).toBe(1);

    t.clock.advance(HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease.status).toBe('ACTIVE');
    await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: rid, amount: 2 }] })
      .expect(200);
    expect(Object.values(await slotsOf(rid)).reduce((a, b) => a + b, 0)).toBe(2);
    // the manager brings the compute service's size in line at its next poll
    await t.settle();
    expect(Object.fromEntries(driver.sizes.get(rid) ?? [])).toEqual(await slotsOf(rid));
    const other = await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: rid, vcpus: 2 }] })
      .expect(400);
    expect(other.body.error_message).toContain('Only amount can change');
    await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: rid, amount: 1 }] })
      .expect(400);
    await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: rid, amount: 3 }] })
      .expect(409);
    expect((await t.http.get(`/v1/leases/${id}`)).body.lease).toMatchObject({ status: 'ACTIVE' });
  });

  it('should make the flavor, group, aggregate and access at start and remove them at the end', async () => {
    t.clock.set(new Date('2041-06-01T00:00:00Z'));
    await addHosts(t.http, ['fl-1', 'fl-2'], () => ({ zone: 'fl' }));
    const created = await lease(
      'fl',
      'now',
      '2041-06-01 02:00',
      slot('fl', { amount: 2, affinity: false }),
      { 'X-Project-Id': 'tenant-x', 'X-Roles': 'member' },
    ).expect(201);
    const rid = created.body.lease.reservations[0].id;
    await t.settle();
    const shown = (await t.http.get(`/v1/leases/${created.body.lease.id}`)).body.lease
      .reservations[0];
    expect(shown.status).toBe('active');
    expect(shown.server_group_id).toMatch(/^group-/);
    expect(typeof shown.aggregate_id).toBe('number');
    expect(driver.flavors.get(rid)).toMatchObject({
      name: `reservation:${rid}`,
      vcpus: 4,
      ramMb: 4096,
      diskGb: 10,
      extraSpecs: {
        'aggregate_instance_extra_specs:reservation': rid,
        [`resources:CUSTOM_RESERVATION_${rid.toUpperCase().replace(/-/g, '_')}`]: '1',
        affinity_id: shown.server_group_id,
      },
    });
    // the compute service holds exactly the slots: one on each host
    expect(Object.fromEntries(driver.sizes.get(rid) ?? [])).toEqual({ 'fl-1': 1, 'fl-2': 1 });
    expect([...(driver.flavors.get(rid)?.access ?? [])]).toEqual(['tenant-x']);
    // no Keystone here: no trust, the group is made for the project by Climate itself
    expect(driver.groups.get(shown.server_group_id)).toMatchObject({
      policy: 'anti-affinity',
      projectId: 'tenant-x',
      trustId: null,
    });
    expect(created.body.lease.trust_id).toBeNull();
    expect(driver.pools.get(rid)?.spec?.metadata).toMatchObject({
      reservation: rid,
      filter_tenant_id: 'tenant-x',
      'blazar:owner': 'tenant-x',
    });
    expect(driver.poolOf('fl-1').sort()).toEqual(['freepool', rid].sort());

    driver.servers.set('fl-1', [{ id: 'vm-fl', name: rid, projectId: 'tenant-x' }]);
    // a server Nova placed on a slot, never claimed through the API, shows as a claim
    driver.holders.set(rid, [{ serverId: 'vm-fl', host: 'fl-1' }]);
    await t.app.get(Maintenance).run();
    const claims = (await t.http.get(`/v1/leases/${created.body.lease.id}`)).body.lease
      .reservations[0].claims;
    expect(claims).toEqual([expect.objectContaining({ server_id: 'vm-fl', host: 'fl-1' })]);
    t.clock.advance(3 * HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${created.body.lease.id}`)).body.lease.status).toBe(
      'TERMINATED',
    );
    expect(await driver.serversOnHost('fl-1')).toEqual([]);
    expect(driver.flavors.has(rid)).toBe(false);
    expect(driver.groups.has(shown.server_group_id)).toBe(false);
    expect(driver.pools.has(rid)).toBe(false);
    expect(driver.sizes.has(rid)).toBe(false);
    expect(await slotsOf(rid)).toEqual({});
  });

  it('should not overwrite an update with a start that read the reservation before it', async () => {
    t.clock.set(new Date('2041-06-15T00:00:00Z'));
    await addHosts(t.http, ['lu-1', 'lu-2'], () => ({ zone: 'lu' }));
    const created = await lease('lu', 'now', '2041-06-15 02:00', slot('lu')).expect(201);
    const rid = created.body.lease.reservations[0].id;
    await t.settle();
    // a resync reads the reservation, then an update of amount commits meanwhile
    const stale = await t.app.get(DataSource).manager.findOneByOrFail(Reservation, { id: rid });
    await t.http
      .put(`/v1/leases/${created.body.lease.id}`)
      .send({ reservations: [{ id: rid, amount: 2 }] })
      .expect(200);
    await t.app.get(VirtualInstancePlugin).onStart(stale, await leaseRow(created.body.lease.id));
    const shown = (await t.http.get(`/v1/leases/${created.body.lease.id}`)).body.lease;
    expect(shown.reservations[0].amount).toBe(2);
    expect(Object.values(await slotsOf(rid)).reduce((a, b) => a + b, 0)).toBe(2);
  });

  it('should never oversubscribe a host when creates race', async () => {
    t.clock.set(new Date('2041-07-01T00:00:00Z'));
    await addHosts(t.http, ['race-1', 'race-2', 'race-3', 'race-4'], () => ({ zone: 'race' }));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        lease(`r${i}`, '2041-07-02 00:00', '2041-07-03 00:00', slot('race')),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(8);
    expect(results.filter((r) => r.status === 409)).toHaveLength(12);
    const client = await connect(db.url);
    const { rows } = await client.query(
      `SELECT h.hypervisor_hostname AS host, sum(a.slots * a.vcpus)::int AS cpu FROM instance_allocations a
         JOIN hosts h ON h.id = a.host_id WHERE h.hypervisor_hostname LIKE 'race-%' GROUP BY 1 ORDER BY 1`,
    );
    await client.end();
    expect(rows).toEqual(
      ['race-1', 'race-2', 'race-3', 'race-4'].map((host) => ({ host, cpu: 8 })),
    );
  });

  it('should reserve an existing shelved server and wake it on its slot at the start', async () => {
    t.clock.set(new Date('2041-08-01T00:00:00Z'));
    await addHosts(t.http, ['cf-1'], () => ({ zone: 'cf' }));
    const tenant = { 'X-Project-Id': 'tenant-y', 'X-Roles': 'member' };
    const shelved = {
      projectId: 'tenant-y',
      status: 'SHELVED_OFFLOADED',
      vcpus: 2,
      memoryMb: 2048,
      diskGb: 5,
      host: null,
    };
    driver.shelved.set('srv-1', { id: 'srv-1', ...shelved });
    driver.shelved.set('srv-busy', { id: 'srv-busy', ...shelved, status: 'ACTIVE' });
    const body = (serverId: string) => ({
      name: 'climate-flow',
      start_date: 'now',
      end_date: '2041-08-01 02:00',
      reservations: [
        {
          resource_type: 'virtual:instance',
          resource_id: serverId,
          resource_properties: '["==", "$zone", "cf"]',
        },
      ],
    });
    await t.http
      .post('/v1/leases')
      .set({ 'X-Project-Id': 'someone-else', 'X-Roles': 'member' })
      .send(body('srv-1'))
      .expect(400);
    await t.http.post('/v1/leases').set(tenant).send(body('no-such-server')).expect(400);
    const busy = await t.http.post('/v1/leases').set(tenant).send(body('srv-busy')).expect(400);
    // a server still being scheduled may ask for its lease (the reserved=True boot)
    driver.shelved.set('srv-new', { id: 'srv-new', ...shelved, status: 'BUILD' });
    await t.http
      .post('/v1/leases')
      .set(tenant)
      .send({ ...body('srv-new'), start_date: '2041-08-01 01:00' })
      .expect(201);
    // it boots where plain servers go, then waits shelved until its start
    Object.assign(driver.shelved.get('srv-new') ?? {}, { status: 'ACTIVE', host: 'elsewhere' });
    await t.app.get(Maintenance).run();
    expect(driver.shelved.get('srv-new')?.status).toBe('SHELVED_OFFLOADED');
    expect(busy.body.error_message).toContain('only a shelved server can be reserved');

    const created = await t.http.post('/v1/leases').set(tenant).send(body('srv-1')).expect(201);
    const r = created.body.lease.reservations[0];
    expect(r).toMatchObject({
      vcpus: 2,
      memory_mb: 2048,
      disk_gb: 5,
      amount: 1,
      server_id: 'srv-1',
    });
    expect(await slotsOf(r.id)).toEqual({ 'cf-1': 1 });

    await t.settle();
    expect(driver.shelved.get('srv-1')).toMatchObject({ status: 'ACTIVE', host: 'cf-1' });
    t.clock.advance(3 * HOUR);
    await t.settle();
    expect(driver.shelved.has('srv-1')).toBe(false);
    expect(
      (await t.http.get(`/v1/leases/${created.body.lease.id}`).set(tenant)).body.lease.status,
    ).toBe('TERMINATED');
  });
});
