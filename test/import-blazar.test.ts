import { runCli } from '../src/import/cli.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import {
  BlazarDatabase,
  expectedBlazar,
  ExpectedLease,
  loadBlazarDump,
  timestamp,
  wireDate,
} from './support/mariadb.js';

const FLOATING = 'virtual:floatingip';
const expected = expectedBlazar();
/** Climate takes every lease, of the three types. */
const carried = expected.leases;
const hostsOnly = carried
  .flatMap((l) => l.reservations)
  .filter((r) => r.resource_type !== FLOATING);
const floating = carried.flatMap((l) => l.reservations).filter((r) => r.resource_type === FLOATING);
const byName = (name: string) => expected.leases.find((l) => l.name === name) as ExpectedLease;

describe('importing the Blazar database written by Blazar itself', () => {
  let source: BlazarDatabase;
  let db: TestDatabase;
  let t: TestApp;
  const output: string[] = [];

  beforeAll(async () => {
    source = await loadBlazarDump();
    db = await createTestDatabase();
    const status = await runCli(
      { from: source.url, dryRun: false, verify: false, skipTypes: [] },
      { DATABASE_URL: db.url },
      (line) => output.push(line),
    );
    expect({ status, output }).toMatchObject({ status: 0 });
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: `physical:host,virtual:instance,${FLOATING}` },
    });
    t.clock.set(new Date('2030-01-01T00:00:00Z'));
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await source?.drop();
  });

  it('should answer GET /v1/os-hosts with every host as Blazar had it, capabilities flattened', async () => {
    const { hosts } = (await t.http.get('/v1/os-hosts').expect(200)).body;
    expect(hosts).toHaveLength(expected.hosts.length);
    for (const h of expected.hosts) {
      const got = hosts.find((x: { id: string }) => x.id === h.id);
      expect(got).toEqual({
        ...(h.extra_capabilities as object),
        id: h.id,
        hypervisor_hostname: h.hypervisor_hostname,
        service_name: h.service_name,
        vcpus: h.vcpus,
        memory_mb: h.memory_mb,
        local_gb: h.local_gb,
        hypervisor_type: h.hypervisor_type,
        hypervisor_version: h.hypervisor_version,
        cpu_info: h.cpu_info,
        availability_zone: h.availability_zone,
        status: null,
        reservable: h.reservable,
        trust_id: h.trust_id,
        pool: expect.any(String),
        created_at: timestamp(h.created_at as string),
        updated_at: timestamp(h.updated_at as string | null),
      });
    }
  });

  it('should keep the property catalogue with its private flags', async () => {
    const all = (await t.http.get('/v1/os-hosts/properties?detail=True&all=True').expect(200)).body;
    const shown = (await t.http.get('/v1/os-hosts/properties?detail=True').expect(200)).body;
    for (const p of expected.resource_properties) {
      expect(all.resource_properties).toContainEqual(
        expect.objectContaining({ property: p.property_name, private: p.private }),
      );
      const listed = shown.resource_properties.some(
        (x: { property: string }) => x.property === p.property_name,
      );
      expect(listed).toBe(!p.private);
    }
    expect(expected.resource_properties.some((p) => p.private)).toBe(true);
  });

  it('should answer GET /v1/leases with every lease, reservation and event as Blazar had them', async () => {
    const { leases } = (await t.http.get('/v1/leases').expect(200)).body;
    expect(leases.map((l: { id: string }) => l.id).sort()).toEqual(carried.map((l) => l.id).sort());
    for (const l of carried) {
      const got = (await t.http.get(`/v1/leases/${l.id}`).expect(200)).body.lease;
      expect(got).toMatchObject({
        id: l.id,
        name: l.name,
        project_id: l.project_id,
        user_id: l.user_id,
        trust_id: l.trust_id,
        status: l.status,
        degraded: l.degraded,
        start_date: wireDate(l.start_date),
        end_date: wireDate(l.end_date),
        created_at: timestamp(l.created_at),
        updated_at: timestamp(l.updated_at),
      });
      expect(got.reservations).toHaveLength(l.reservations.length);
      for (const r of l.reservations) {
        const fip = r.floatingip_reservation;
        const typed = fip
          ? {
              network_id: fip.network_id,
              amount: fip.amount,
              required_floatingips: fip.required_floatingips.map((x) => x.address),
            }
          : r.computehost_reservation
            ? {
                min: r.computehost_reservation.min,
                max: r.computehost_reservation.max,
                hypervisor_properties: r.computehost_reservation.hypervisor_properties,
                resource_properties: r.computehost_reservation.resource_properties,
                before_end: r.computehost_reservation.before_end,
              }
            : {
                ...['vcpus', 'memory_mb', 'disk_gb', 'amount', 'affinity'].reduce(
                  (o, k) => ({ ...o, [k]: r.instance_reservation?.[k] }),
                  {},
                ),
                resource_properties: r.instance_reservation?.resource_properties,
                flavor_id: r.instance_reservation?.flavor_id,
                aggregate_id: r.instance_reservation?.aggregate_id,
                server_group_id: r.instance_reservation?.server_group_id,
              };
        expect(got.reservations).toContainEqual(
          expect.objectContaining({
            id: r.id,
            lease_id: l.id,
            resource_type: r.resource_type,
            resource_id: r.resource_id,
            status: r.status,
            missing_resources: r.missing_resources,
            resources_changed: r.resources_changed,
            created_at: timestamp(r.created_at),
            updated_at: timestamp(r.updated_at),
            ...typed,
          }),
        );
      }
      expect(got.events).toHaveLength(l.events.length);
      for (const e of l.events) {
        expect(got.events).toContainEqual(
          expect.objectContaining({
            id: e.id,
            event_type: e.event_type,
            time: wireDate(e.time),
            status: e.status,
            created_at: timestamp(e.created_at),
            updated_at: timestamp(e.updated_at),
          }),
        );
      }
    }
  });

  it('should hold every allocation Blazar held, one slot per Blazar row', async () => {
    const pg = await connect(db.url);
    try {
      for (const r of hostsOnly) {
        const res = await t.http.get(`/v1/os-hosts/allocations?reservation_id=${r.id}`).expect(200);
        const hosts = res.body.allocations
          .filter((a: { reservations: unknown[] }) => a.reservations.length > 0)
          .map((a: { resource_id: string }) => a.resource_id)
          .sort();
        expect(hosts).toEqual([...new Set(r.allocations.map((a) => a.compute_host_id))].sort());
        const { rows } = await pg.query(
          `SELECT host_id::text AS host, slots FROM instance_allocations WHERE reservation_id = $1
           UNION ALL SELECT host_id::text, 1 FROM host_allocations WHERE reservation_id = $1`,
          [r.id],
        );
        const slots = rows.flatMap((x) => Array<string>(x.slots).fill(x.host)).sort();
        expect(slots).toEqual(r.allocations.map((a) => a.compute_host_id).sort());
      }
    } finally {
      await pg.end();
    }
  });

  it('should answer GET /v1/floatingips with every address Blazar had registered, ids kept', async () => {
    const { floatingips } = (await t.http.get('/v1/floatingips').expect(200)).body;
    expect(floatingips).toHaveLength(expected.floatingips.length);
    for (const f of expected.floatingips) {
      expect(floatingips).toContainEqual({
        id: f.id,
        floating_network_id: f.floating_network_id,
        subnet_id: f.subnet_id,
        floating_ip_address: f.floating_ip_address,
        reservable: f.reservable,
        created_at: timestamp(f.created_at),
        updated_at: timestamp(f.updated_at),
      });
    }
  });

  it('should hold every floating-IP allocation Blazar held, ids kept, from the lease start', async () => {
    const pg = await connect(db.url);
    try {
      const { rows } = await pg.query(
        `SELECT a.id, a.floatingip_id, a.reservation_id, host(f.floating_ip_address) AS address,
                lower(a.during) AS lo FROM floatingip_allocations a JOIN floatingips f ON f.id = a.floatingip_id`,
      );
      const wanted = floating.flatMap((r) =>
        r.allocations.map((a) => ({
          id: a.id,
          floatingip_id: a.floatingip_id,
          reservation_id: r.id,
          address: a.floating_ip_address,
        })),
      );
      expect(wanted.length).toBeGreaterThan(0);
      expect(rows.map(({ lo: _lo, ...a }) => a)).toEqual(
        expect.arrayContaining(wanted.map((w) => expect.objectContaining(w))),
      );
      expect(rows).toHaveLength(wanted.length);
      for (const row of rows) {
        const lease = carried.find((l) => l.reservations.some((r) => r.id === row.reservation_id));
        expect(row.lo.toISOString()).toBe(new Date(lease?.start_date as string).toISOString());
      }
    } finally {
      await pg.end();
    }
  });

  it('should refuse a new lease the addresses an imported allocation holds, and give it a free one', async () => {
    // p2-fip-jan holds 198.51.100.21 of public-v2 (two addresses) from 2030-01-02 to 01-04.
    const jan = carried.find((l) => l.name === 'p2-fip-jan') as ExpectedLease;
    const held = jan.reservations[0];
    const network = held.floatingip_reservation?.network_id as string;
    const address = held.allocations[0].floating_ip_address as string;
    const body = (params: Record<string, unknown>) => ({
      name: 'fip-after-import',
      start_date: '2030-01-02 12:00',
      end_date: '2030-01-03 00:00',
      reservations: [{ resource_type: FLOATING, network_id: network, ...params }],
    });
    await t.http
      .post('/v1/leases')
      .send(body({ amount: 2 }))
      .expect(409);
    await t.http
      .post('/v1/leases')
      .send(body({ amount: 1, required_floatingips: [address] }))
      .expect(409);
    const made = (
      await t.http
        .post('/v1/leases')
        .send(body({ amount: 1 }))
        .expect(201)
    ).body.lease;
    const other = expected.floatingips.find(
      (f) => f.floating_network_id === network && f.floating_ip_address !== address,
    );
    const pg = await connect(db.url);
    try {
      const { rows } = await pg.query(
        `SELECT a.floatingip_id FROM floatingip_allocations a JOIN reservations r ON r.id = a.reservation_id
          WHERE r.lease_id = $1`,
        [made.id],
      );
      expect(rows.map((r) => r.floatingip_id)).toEqual([other?.id]);
    } finally {
      await pg.end();
    }
    await t.http.delete(`/v1/leases/${made.id}`).expect(204);
  });

  it('should list who holds each host now as Blazar did at the reference instant', async () => {
    const { allocations } = (await t.http.get('/v1/os-hosts/allocations').expect(200)).body;
    const hostIds = new Map(expected.hosts.map((h) => [h.hypervisor_hostname as string, h.id]));
    for (const [host, held] of Object.entries(
      expected.derived_at_reference_instant.host_allocations,
    )) {
      const got = allocations.find(
        (a: { resource_id: string }) => a.resource_id === hostIds.get(host),
      );
      const ids = got.reservations.map((r: { id: string }) => r.id);
      for (const h of held) expect(ids).toContain(h.reservation_id);
    }
  });

  it('should refuse a new lease the hosts an imported allocation holds, and give it the free ones', async () => {
    // p1-gpu-now holds compute-01 and -02 until 2030-01-05; -03 and -04 are the other GPU hosts.
    const body = (min: number) => ({
      name: `after-import-${min}`,
      start_date: '2030-01-01 01:00',
      end_date: '2030-01-02 00:00',
      reservations: [
        {
          resource_type: 'physical:host',
          min,
          max: min,
          resource_properties: '["==", "$gpu", "true"]',
        },
      ],
    });
    await t.http.post('/v1/leases').send(body(3)).expect(409);
    const made = (await t.http.post('/v1/leases').send(body(2)).expect(201)).body.lease;
    const res = await t.http.get(`/v1/os-hosts/allocations?lease_id=${made.id}`).expect(200);
    const hosts = res.body.allocations
      .filter((a: { reservations: unknown[] }) => a.reservations.length > 0)
      .map((a: { resource_id: string }) => a.resource_id)
      .sort();
    expect(hosts).toEqual(['3', '4']);
    await t.http.delete(`/v1/leases/${made.id}`).expect(204);
  });

  it('should end an imported active lease on time and start and end an imported future one on time', async () => {
    const status = async (name: string) =>
      (await t.http.get(`/v1/leases/${byName(name).id}`).expect(200)).body.lease.status;
    const at = async (iso: string) => {
      t.clock.set(new Date(iso));
      await t.settle();
    };
    await at('2030-01-01T01:59:00Z');
    expect(await status('p1-mixed-ending')).toBe('ACTIVE');
    // A running host reservation's hosts are in its pool, as Climate's start puts them.
    const running = byName('p1-mixed-ending').reservations.find(
      (r) => r.resource_type === 'physical:host',
    );
    expect((await t.http.get('/v1/os-hosts/5').expect(200)).body.host.pool).toBe(running?.id);
    await at('2030-01-01T02:00:00Z');
    expect(await status('p1-mixed-ending')).toBe('TERMINATED');
    const pool = (await t.http.get('/v1/os-hosts/5').expect(200)).body.host.pool;
    expect(pool).toBe('freepool');

    // The imported future floating-IP lease (builtin driver: the address is only booked).
    await at('2030-01-01T23:59:00Z');
    expect(await status('p2-fip-jan')).toBe('PENDING');
    await at('2030-01-02T00:00:00Z');
    expect(await status('p2-fip-jan')).toBe('ACTIVE');
    await at('2030-01-03T23:59:00Z');
    expect(await status('p2-fip-jan')).toBe('ACTIVE');
    await at('2030-01-04T00:00:00Z');
    const fipEnded = (await t.http.get(`/v1/leases/${byName('p2-fip-jan').id}`).expect(200)).body
      .lease;
    expect(fipEnded.status).toBe('TERMINATED');
    expect(fipEnded.reservations[0].status).toBe('deleted');

    await at('2030-01-04T23:59:00Z');
    expect(await status('p1-vms-antiaffinity-jan')).toBe('PENDING');
    await at('2030-01-05T00:00:00Z');
    expect(await status('p1-vms-antiaffinity-jan')).toBe('ACTIVE');
    await at('2030-01-07T23:59:00Z');
    expect(await status('p1-vms-antiaffinity-jan')).toBe('ACTIVE');
    await at('2030-01-08T00:00:00Z');
    const ended = (
      await t.http.get(`/v1/leases/${byName('p1-vms-antiaffinity-jan').id}`).expect(200)
    ).body.lease;
    expect(ended.status).toBe('TERMINATED');
    expect(ended.events.every((e: { status: string }) => e.status === 'DONE')).toBe(true);
  });
});
