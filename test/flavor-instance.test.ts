import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import type { SourceFlavor } from '../src/compute/compute-driver.js';
import { OpenApiChecker } from './support/openapi-checker.js';

const HOUR = 3600_000;
/** Hosts of 8 vCPU / 16 GB / 100 GB; 2 vCPUs per core (dedicated CPUs count double). */
const env = {
  PLUGINS: 'physical:host,virtual:instance,flavor:instance',
  CPU_ALLOCATION_RATIO: '2',
};
const tenant = { 'X-Project-Id': 'tenant-f', 'X-User-Id': 'u', 'X-Roles': 'member' };
const other = { 'X-Project-Id': 'tenant-g', 'X-User-Id': 'v', 'X-Roles': 'member' };

function flavor(
  id: string,
  size: Partial<SourceFlavor>,
  projects: string[] | null = null,
): SourceFlavor & { projects: string[] | null } {
  const f = { vcpus: 1, ramMb: 512, diskGb: 1, ephemeralGb: 0, swapMb: 0, extraSpecs: {}, ...size };
  return {
    id,
    name: id,
    ...f,
    shown: {
      id,
      name: id,
      vcpus: f.vcpus,
      ram: f.ramMb,
      disk: f.diskGb,
      'OS-FLV-EXT-DATA:ephemeral': f.ephemeralGb,
      swap: f.swapMb,
      extra_specs: f.extraSpecs,
    },
    projects,
  };
}

describe('flavor:instance reservations', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env, driver });
    await addHosts(t.http, ['fx-1', 'fx-2']);
    for (const f of [
      flavor('sized', {
        vcpus: 2,
        ramMb: 2048,
        diskGb: 10,
        ephemeralGb: 5,
        swapMb: 1500,
        extraSpecs: { 'hw_rng:allowed': 'True', 'resources:CUSTOM_X': '1' },
      }),
      flavor('pinned', { vcpus: 2, extraSpecs: { 'hw:cpu_policy': 'dedicated' } }),
      flavor('override', { vcpus: 1, extraSpecs: { 'resources:VCPU': '4' } }),
      flavor('fast', { vcpus: 1, extraSpecs: { 'trait:CUSTOM_FAST': 'required' } }),
      flavor('slow', { vcpus: 1, extraSpecs: { 'trait:CUSTOM_FAST': 'forbidden' } }),
      flavor('nowhere', { extraSpecs: { 'trait:CUSTOM_NONE': 'required' } }),
      flavor('badtrait', { extraSpecs: { 'trait:CUSTOM_FAST': 'preferred' } }),
      flavor('baremetal', { extraSpecs: { 'resources:VCPU': '0' } }),
      flavor('mine', { vcpus: 8 }, ['tenant-f']),
      flavor('theirs', {}, ['tenant-g']),
    ]) {
      driver.sourceFlavors.set(f.id, f);
    }
    driver.traits.set('fx-1', ['CUSTOM_FAST']);
    driver.traits.set('fx-2', []);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const create = (
    name: string,
    start: string,
    end: string,
    values: Record<string, unknown>,
    headers: Record<string, string> = tenant,
  ) =>
    t.http
      .post('/v1/leases')
      .set(headers)
      .send({
        name,
        start_date: start,
        end_date: end,
        reservations: [{ resource_type: 'flavor:instance', amount: 1, ...values }],
      });

  async function query<T>(text: string, params: unknown[] = []): Promise<T[]> {
    const client = await connect(db.url);
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  }
  const slotsOf = (rid: string) =>
    query<{ host: string; slots: number; vcpus: number; memory_mb: number; disk_gb: number }>(
      `SELECT h.hypervisor_hostname AS host, a.slots, a.vcpus, a.memory_mb, a.disk_gb
         FROM instance_allocations a JOIN hosts h ON h.id = a.host_id
        WHERE a.reservation_id = $1 ORDER BY 1`,
      [rid],
    );
  const count = async (table: string) =>
    Number((await query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n);

  it("should size slots from the flavor (ephemeral and swap counted) and show Blazar's keys", async () => {
    const res = await create('sized', '2042-01-02 00:00', '2042-01-03 00:00', {
      flavor_id: 'sized',
      amount: 2,
      resource_properties: '',
    }).expect(201);
    const r = res.body.lease.reservations[0];
    expect(r).toMatchObject({
      resource_type: 'flavor:instance',
      vcpus: 2,
      memory_mb: 2048,
      disk_gb: 10,
      amount: 2,
      affinity: null,
      flavor_id: r.id,
      server_group_id: null,
      aggregate_id: null,
    });
    expect(JSON.parse(r.resource_properties)).toMatchObject({
      id: 'sized',
      'OS-FLV-EXT-DATA:ephemeral': 5,
      extra_specs: { 'hw_rng:allowed': 'True', 'resources:CUSTOM_X': '1' },
    });
    const slots = await slotsOf(r.id);
    expect(slots.reduce((n, s) => n + s.slots, 0)).toBe(2);
    // 10 root + 5 ephemeral + 2 (1500 MB of swap, rounded up), as Placement charges it
    for (const s of slots) expect(s).toMatchObject({ vcpus: 2, memory_mb: 2048, disk_gb: 17 });
  });

  it('should count dedicated CPUs as whole cores and refuse what would not fit', async () => {
    const w = ['2042-02-02 00:00', '2042-02-03 00:00'] as const;
    // 2 hosts x 8 cores x ratio 2 = 32 vCPUs; a 2-PCPU server takes 4 of them
    await create('pin-a', ...w, { flavor_id: 'pinned', amount: 6 }).expect(201);
    const leases = await count('leases');
    const full = await create('pin-b', ...w, { flavor_id: 'pinned', amount: 3 }).expect(409);
    expect(full.body).toMatchObject({ error_code: 409, error_type: 'NotEnoughHostsAvailable' });
    expect(await count('leases')).toBe(leases);
    const last = await create('pin-c', ...w, { flavor_id: 'pinned', amount: 2 }).expect(201);
    const [slot] = await slotsOf(last.body.lease.reservations[0].id);
    expect(slot.vcpus).toBe(4);
    // resources:VCPU overrides the flavor's vcpus: nothing is left in that window
    await create('ovr', ...w, { flavor_id: 'override' }).expect(409);
    const alone = await create('ovr-2', '2042-02-04 00:00', '2042-02-05 00:00', {
      flavor_id: 'override',
      amount: 4,
    }).expect(201);
    expect((await slotsOf(alone.body.lease.reservations[0].id))[0].vcpus).toBe(4);
  });

  it("should place slots only on hosts with the flavor's required traits and without forbidden ones", async () => {
    const w = ['2042-03-02 00:00', '2042-03-03 00:00'] as const;
    const fast = await create('fast', ...w, { flavor_id: 'fast', amount: 3 }).expect(201);
    expect((await slotsOf(fast.body.lease.reservations[0].id)).map((s) => s.host)).toEqual([
      'fx-1',
    ]);
    const slow = await create('slow', ...w, { flavor_id: 'slow', amount: 2 }).expect(201);
    expect((await slotsOf(slow.body.lease.reservations[0].id)).map((s) => s.host)).toEqual([
      'fx-2',
    ]);
    const none = await create('none', ...w, { flavor_id: 'nowhere' }).expect(409);
    expect(none.body.error_type).toBe('NotEnoughHostsAvailable');
  });

  it('should answer 4xx with Blazar error bodies and change nothing', async () => {
    const w = ['2042-04-02 00:00', '2042-04-03 00:00'] as const;
    const before = [await count('leases'), await count('instance_allocations')];
    const cases: [Record<string, unknown>, number, string, RegExp][] = [
      [{ flavor_id: undefined }, 400, 'MissingParameter', /Missing parameter flavor_id/],
      [{ flavor_id: 'sized', amount: 0 }, 400, 'MalformedParameter', /amount/],
      [{ flavor_id: 'sized', amount: 'two' }, 400, 'MalformedParameter', /amount/],
      [{ flavor_id: 'sized', vcpus: 2 }, 400, 'InvalidInput', /Unknown parameter vcpus/],
      [{ flavor_id: 'missing' }, 400, 'FlavorNotFound', /Flavor missing could not be found/],
      [{ flavor_id: 'theirs' }, 400, 'FlavorNotFound', /Flavor theirs/],
      [{ flavor_id: 'badtrait' }, 400, 'MalformedParameter', /Invalid value for trait/],
      [{ flavor_id: 'baremetal' }, 400, 'MalformedParameter', /physical:host/],
      [{ flavor_id: 'sized', affinity: 'maybe' }, 400, 'MalformedParameter', /affinity/],
      [{ flavor_id: 'sized', amount: 100 }, 409, 'NotEnoughHostsAvailable', /Not enough hosts/],
    ];
    for (const [values, status, name, message] of cases) {
      const res = await create('bad', ...w, values);
      expect([res.status, res.body.error_type]).toEqual([status, name]);
      expect(res.body).toMatchObject({ error_code: status });
      expect(res.body.error_message).toMatch(message);
    }
    expect([await count('leases'), await count('instance_allocations')]).toEqual(before);
    // a private flavor of the project's own is fine
    await create('mine', ...w, { flavor_id: 'mine' }).expect(201);
  });

  it('should refuse any update but a rename with 409, as Blazar, and change nothing', async () => {
    const created = await create('upd', '2042-05-02 00:00', '2042-05-03 00:00', {
      flavor_id: 'sized',
    }).expect(201);
    const { id } = created.body.lease;
    const rid = created.body.lease.reservations[0].id;
    const slots = await slotsOf(rid);
    for (const body of [
      { end_date: '2042-05-04 00:00' },
      { start_date: '2042-05-01 12:00' },
      { reservations: [{ id: rid, amount: 2 }] },
      // Blazar's manager sends every update but a lone rename to the plugin, which refuses
      { before_end_date: '2042-05-02 12:00' },
      { name: 'and-events', events: [] },
    ]) {
      const res = await t.http.put(`/v1/leases/${id}`).set(tenant).send(body).expect(409);
      expect(res.body).toMatchObject({
        error_code: 409,
        error_type: 'NotImplemented',
        error_message:
          "Updating leases for 'flavor:instance' type reservations is not yet supported.",
      });
    }
    const shown = (await t.http.get(`/v1/leases/${id}`).set(tenant).expect(200)).body.lease;
    expect(shown).toMatchObject({ end_date: created.body.lease.end_date, status: 'PENDING' });
    expect(shown.reservations[0].amount).toBe(1);
    expect(await slotsOf(rid)).toEqual(slots);
    await t.http.put(`/v1/leases/${id}`).set(tenant).send({ name: 'renamed' }).expect(200);
  });

  it('should answer as the OpenAPI document says', async () => {
    const checker = new OpenApiChecker((await t.http.get('/openapi.json')).body);
    const body = {
      name: 'doc',
      start_date: '2042-08-02 00:00',
      end_date: '2042-08-03 00:00',
      reservations: [{ resource_type: 'flavor:instance', flavor_id: 'sized', amount: 1 }],
    };
    const created = await t.http.post('/v1/leases').set(tenant).send(body).expect(201);
    checker.record('POST /v1/leases', created, body);
    const { id } = created.body.lease;
    checker.record('GET /v1/leases/{id}', await t.http.get(`/v1/leases/${id}`).set(tenant));
    const refused = await t.http
      .put(`/v1/leases/${id}`)
      .set(tenant)
      .send({ end_date: '2042-08-04 00:00' });
    checker.record('PUT /v1/leases/{id}', refused);
    expect(checker.problems).toEqual([]);
  });

  it("should hide a project's flavor reservation from another project", async () => {
    const created = await create('hidden', '2042-06-02 00:00', '2042-06-03 00:00', {
      flavor_id: 'sized',
    }).expect(201);
    const { id } = created.body.lease;
    await t.http.get(`/v1/leases/${id}`).set(other).expect(404);
    const listed = (await t.http.get('/v1/leases').set(other).expect(200)).body.leases;
    expect(listed.map((l: { id: string }) => l.id)).not.toContain(id);
    await t.http.delete(`/v1/leases/${id}`).set(other).expect(404);
  });

  it('should make the reservation flavor from the source at start and remove it at the end', async () => {
    t.clock.set(new Date('2042-07-01T00:00:00Z'));
    const created = await create('run', 'now', '2042-07-01 02:00', {
      flavor_id: 'sized',
      amount: 2,
      affinity: true,
    }).expect(201);
    const rid = created.body.lease.reservations[0].id;
    await t.settle();
    const lease = (await t.http.get(`/v1/leases/${created.body.lease.id}`).set(tenant)).body.lease;
    expect(lease.status).toBe('ACTIVE');
    const made = driver.flavors.get(rid);
    expect(made).toMatchObject({
      name: `reservation:${rid}`,
      vcpus: 2,
      ramMb: 2048,
      diskGb: 10,
      ephemeralGb: 5,
      swapMb: 1500,
      extraSpecs: {
        'hw_rng:allowed': 'True',
        'resources:CUSTOM_X': '1',
        'aggregate_instance_extra_specs:reservation': rid,
        [`resources:CUSTOM_RESERVATION_${rid.toUpperCase().replace(/-/g, '_')}`]: '1',
        affinity_id: lease.reservations[0].server_group_id,
      },
    });
    expect([...(made?.access ?? [])]).toEqual(['tenant-f']);
    // affinity: both slots on one host, and Placement sized to them
    const slots = await slotsOf(rid);
    expect(slots).toHaveLength(1);
    expect([...(driver.sizes.get(rid) ?? [])]).toEqual([[slots[0].host, 2]]);
    t.clock.advance(2 * HOUR);
    await t.settle();
    expect(driver.flavors.has(rid)).toBe(false);
    expect(driver.sizes.has(rid)).toBe(false);
    expect(await slotsOf(rid)).toEqual([]);
  });

  it("should move the slots of a failed host to another host with the flavor's traits", async () => {
    t.clock.set(new Date('2042-09-01T00:00:00Z'));
    await addHosts(t.http, ['fx-3']);
    driver.traits.set('fx-3', ['CUSTOM_FAST']);
    const created = await create('heal', 'now', '2042-09-01 02:00', {
      flavor_id: 'fast',
      amount: 2,
    }).expect(201);
    const { id } = created.body.lease;
    const rid = created.body.lease.reservations[0].id;
    await t.settle();
    expect((await slotsOf(rid)).map((s) => [s.host, s.slots])).toEqual([['fx-1', 2]]);
    const hosts = (await t.http.get('/v1/os-hosts').expect(200)).body.hosts as {
      id: string;
      hypervisor_hostname: string;
    }[];
    const fx1 = hosts.find((h) => h.hypervisor_hostname === 'fx-1')?.id;
    // fx-1 fails: fx-2 comes first but lacks the trait; fx-3 has it
    await t.http.put(`/v1/os-hosts/${fx1}`).send({ reservable: false }).expect(200);
    expect((await slotsOf(rid)).map((s) => [s.host, s.slots])).toEqual([['fx-3', 2]]);
    expect(Object.fromEntries(driver.sizes.get(rid) ?? [])).toEqual({ 'fx-3': 2 });
    const shown = (await t.http.get(`/v1/leases/${id}`).set(tenant)).body.lease;
    expect(shown.reservations[0]).toMatchObject({
      resources_changed: true,
      missing_resources: false,
    });
    await t.http.put(`/v1/os-hosts/${fx1}`).send({ reservable: true }).expect(200);
  });
});

describe('flavor:instance without virtual:instance enabled', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host,flavor:instance' },
      driver,
    });
    await addHosts(t.http, ['solo-1', 'solo-2']);
    driver.sourceFlavors.set('small', flavor('small', {}));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should still send the reservation flavor only to its hosts, for its project', async () => {
    t.clock.set(new Date('2043-01-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .set(tenant)
      .send({
        name: 'solo',
        start_date: 'now',
        end_date: '2043-01-01 02:00',
        reservations: [{ resource_type: 'flavor:instance', flavor_id: 'small', amount: 1 }],
      })
      .expect(201);
    const rid = created.body.lease.reservations[0].id;
    await t.settle();
    const ask = (project: string) =>
      t.http
        .post('/v1/scheduler/filter')
        .send({
          project_id: project,
          hosts: ['solo-1', 'solo-2'],
          flavor_extra_specs: { 'aggregate_instance_extra_specs:reservation': rid },
        })
        .expect(200);
    expect((await ask('tenant-f')).body.hosts).toEqual(['solo-1']);
    expect((await ask('tenant-g')).body.hosts).toEqual([]);
  });
});
