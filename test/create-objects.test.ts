import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { ComputeServiceError } from '../src/compute/openstack-http.js';
import type { PoolSpec } from '../src/compute/compute-driver.js';

const HOUR = 3_600_000;
const tenant = { 'X-Project-Id': 'tenant', 'X-User-Id': 'alice', 'X-Roles': 'member' };

/** A compute service that can be unreachable for one call, by method name. */
class Unreachable extends MemoryDriver {
  readonly down = new Set<string>();
  private check(method: string): void {
    if (this.down.delete(method)) throw new ComputeServiceError('Nova is unreachable', 503);
  }
  override async ensurePool(spec: PoolSpec): Promise<number | null> {
    this.check('ensurePool');
    return super.ensurePool(spec);
  }
  override async ensureFlavor(...args: Parameters<MemoryDriver['ensureFlavor']>): Promise<void> {
    this.check('ensureFlavor');
    return super.ensureFlavor(...args);
  }
  override async ensureServerGroup(
    ...args: Parameters<MemoryDriver['ensureServerGroup']>
  ): Promise<string> {
    this.check('ensureServerGroup');
    return super.ensureServerGroup(...args);
  }
}

/** Issue 25 item 3: a reservation's compute objects exist once its lease is created. */
describe("reservations' compute objects at create", () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new Unreachable();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' },
    });
    t.clock.set(new Date('2042-01-01T00:00:00Z'));
    await addHosts(t.http, ['co-1', 'co-2', 'co-3'], () => ({ zone: 'co' }));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  let n = 0;
  const create = (reservation: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    n += 1;
    const start = new Date(Date.parse('2042-01-02T00:00:00Z') + n * 3 * HOUR);
    return t.http
      .post('/v1/leases')
      .set(tenant)
      .send({
        name: `objects-${n}`,
        start_date: start.toISOString(),
        end_date: new Date(start.getTime() + HOUR).toISOString(),
        reservations: [reservation],
        ...extra,
      });
  };

  async function rows(): Promise<number> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(
        `SELECT (SELECT count(*) FROM leases) + (SELECT count(*) FROM reservations) AS n`,
      );
      return Number(rows[0].n);
    } finally {
      await client.end();
    }
  }

  it("should answer an instance reservation's create with its group, flavor and aggregate, and remove them when the lease is deleted before its start", async () => {
    const lease = (await create(slotReservation('co', { affinity: true })).expect(201)).body.lease;
    const r = lease.reservations[0];
    expect(r.flavor_id).toBe(r.id);
    const group = driver.groups.get(r.server_group_id);
    expect(group).toMatchObject({ name: `reservation:${r.id}`, policy: 'affinity' });
    expect(driver.flavors.get(r.id)).toMatchObject({
      name: `reservation:${r.id}`,
      vcpus: 4,
      extraSpecs: expect.objectContaining({ affinity_id: r.server_group_id }),
    });
    // the aggregate, empty until the start
    expect(driver.pools.get(r.id)?.spec?.metadata).toEqual({
      reservation: r.id,
      filter_tenant_id: 'tenant',
      'blazar:owner': 'tenant',
      affinity_id: r.server_group_id,
    });
    expect(driver.pools.get(r.id)?.hosts.size).toBe(0);
    // stored: a read answers the same
    const shown = (await t.http.get(`/v1/leases/${lease.id}`).set(tenant).expect(200)).body.lease;
    expect(shown.reservations[0].server_group_id).toBe(r.server_group_id);

    await t.http.delete(`/v1/leases/${lease.id}`).set(tenant).expect(204);
    expect(driver.groups.has(r.server_group_id)).toBe(false);
    expect(driver.flavors.has(r.id)).toBe(false);
    expect(driver.pools.has(r.id)).toBe(false);
  });

  it("should make a host reservation's aggregate with the lease, hosts joining at the start", async () => {
    const lease = (await create(hostReservation()).expect(201)).body.lease;
    const id = lease.reservations[0].id as string;
    expect(driver.pools.get(id)?.spec).toEqual({
      name: id,
      availabilityZone: `blazar_${id}`,
      metadata: { 'blazar:owner': 'tenant', filter_tenant_id: 'tenant' },
    });
    expect(driver.pools.get(id)?.hosts.size).toBe(0);
    await t.http.delete(`/v1/leases/${lease.id}`).set(tenant).expect(204);
    expect(driver.pools.has(id)).toBe(false);
  });

  it('should answer 503 and write nothing, leaving nothing in the compute service, when it cannot be reached', async () => {
    const before = await rows();
    const groups = driver.groups.size;
    const flavors = driver.flavors.size;
    const pools = driver.pools.size;
    for (const method of ['ensureServerGroup', 'ensureFlavor', 'ensurePool']) {
      driver.down.add(method);
      const res = await create(slotReservation('co', { affinity: false }));
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ error_code: 503, error_name: 503 });
      expect(res.body.error_message).toContain('Nova is unreachable');
      expect(await rows()).toBe(before);
      expect([driver.groups.size, driver.flavors.size, driver.pools.size]).toEqual([
        groups,
        flavors,
        pools,
      ]);
    }
    driver.down.add('ensurePool');
    const host = await create(hostReservation());
    expect(host.status).toBe(503);
    expect(await rows()).toBe(before);
    expect(driver.pools.size).toBe(pools);
  });

  it('should remove what it made when the create then fails in the database', async () => {
    const pools = driver.pools.size;
    const flavors = driver.flavors.size;
    // more hosts than there are: 409 after the compute objects were made
    const full = await create(hostReservation({ min: 9, max: 9 })).expect(409);
    expect(full.body.error_type).toBe('NotEnoughHostsAvailable');
    const big = await create(slotReservation('co', { amount: 50 })).expect(409);
    expect(big.body.error_type).toBe('NotEnoughHostsAvailable');
    expect(driver.pools.size).toBe(pools);
    expect(driver.flavors.size).toBe(flavors);
  });

  it('should keep one set of objects when an Idempotency-Key replays the create', async () => {
    const body = {
      name: 'replayed',
      start_date: '2042-03-01 00:00',
      end_date: '2042-03-01 01:00',
      reservations: [slotReservation('co', { affinity: false })],
    };
    const first = await t.http
      .post('/v1/leases')
      .set(tenant)
      .set('Idempotency-Key', 'objects-once')
      .send(body)
      .expect(201);
    const flavors = driver.flavors.size;
    const again = await t.http
      .post('/v1/leases')
      .set(tenant)
      .set('Idempotency-Key', 'objects-once')
      .send(body)
      .expect(201);
    expect(again.body.lease.id).toBe(first.body.lease.id);
    const r = first.body.lease.reservations[0];
    expect(driver.flavors.size).toBe(flavors);
    expect(driver.flavors.has(r.id)).toBe(true);
    expect(driver.groups.has(r.server_group_id)).toBe(true);
  });

  it('should make the group and flavor again at the start when an update changed them', async () => {
    const lease = (await create(slotReservation('co', { affinity: true })).expect(201)).body.lease;
    const r = lease.reservations[0];
    const oldGroup = r.server_group_id as string;
    const updated = await t.http
      .put(`/v1/leases/${lease.id}`)
      .set(tenant)
      .send({ reservations: [{ id: r.id, affinity: false, vcpus: 2 }] })
      .expect(200);
    // the group of the old affinity is not the reservation's any more
    expect(updated.body.lease.reservations[0].server_group_id).toBeNull();
    t.clock.set(new Date(Date.parse(lease.start_date + 'Z') + 60_000));
    await t.settle();
    const started = (await t.http.get(`/v1/leases/${lease.id}`).set(tenant).expect(200)).body.lease;
    expect(started.status).toBe('ACTIVE');
    const group = started.reservations[0].server_group_id as string;
    expect(driver.groups.has(oldGroup)).toBe(false);
    expect(driver.groups.get(group)?.policy).toBe('anti-affinity');
    expect(driver.flavors.get(r.id)).toMatchObject({
      vcpus: 2,
      access: new Set(['tenant']),
      extraSpecs: expect.objectContaining({ affinity_id: group }),
    });
    t.clock.set(new Date('2042-01-01T00:00:00Z'));
  });
});

describe("a host reservation's aggregate at create, with a provisioning lead time", () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: { PLUGINS: 'physical:host', PROVISIONING_LEAD_MINUTES: '30' },
    });
    t.clock.set(new Date('2042-01-01T00:00:00Z'));
    await addHosts(t.http, ['lead-1']);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should make it closed (no owner) and open it only at the start, as the hosts join early', async () => {
    const lease = (
      await t.http
        .post('/v1/leases')
        .set(tenant)
        .send({
          name: 'lead',
          start_date: '2042-01-01 02:00',
          end_date: '2042-01-01 03:00',
          reservations: [hostReservation()],
        })
        .expect(201)
    ).body.lease;
    const id = lease.reservations[0].id as string;
    expect(driver.pools.get(id)?.spec).toEqual({
      name: id,
      availabilityZone: `blazar_${id}`,
      metadata: {},
    });
    t.clock.set(new Date('2042-01-01T02:00:30Z'));
    await t.settle();
    expect(driver.pools.get(id)?.spec?.metadata).toMatchObject({ 'blazar:owner': 'tenant' });
    expect([...(driver.pools.get(id)?.hosts ?? [])]).toEqual(['lead-1']);
  });
});
