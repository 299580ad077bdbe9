import { adoptComputeState, describeAdoption } from '../src/import/adopt.js';
import { parseArgs, runCli } from '../src/import/cli.js';
import { startApp, TestApp } from './support/app.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import {
  BlazarDatabase,
  expectedBlazar,
  ExpectedLease,
  loadBlazarDump,
} from './support/mariadb.js';
import { MemoryDriver } from './support/memory-driver.js';

const expected = expectedBlazar();
const lease = (name: string) => expected.leases.find((l) => l.name === name) as ExpectedLease;
const reservation = (name: string, type: string) => {
  const r = lease(name).reservations.find((x) => x.resource_type === type);
  if (r === undefined) throw new Error(`no ${type} in ${name}`);
  return r;
};
const hostsOf = (r: { allocations: { hypervisor_hostname: string }[] }) => [
  ...new Set(r.allocations.map((a) => a.hypervisor_hostname)),
];

/**
 * Nova as Blazar leaves it for these rows: every host in the freepool but the running host
 * reservations' (in their aggregate, zone blazar_<id>, blazar:owner); an aggregate made at
 * reserve time for each pending one; an instance reservation's flavor, server group,
 * aggregate (its hosts stay in the freepool) and Placement class, sized once started.
 */
function asBlazarLeftIt(driver: MemoryDriver): void {
  const free = new Set(expected.hosts.map((h) => h.hypervisor_hostname as string));
  for (const l of expected.leases) {
    for (const r of l.reservations) {
      const running = r.status === 'active';
      if (!['pending', 'active', 'error'].includes(r.status)) continue;
      const hosts = running ? hostsOf(r) : [];
      if (r.resource_type === 'physical:host') {
        hosts.forEach((h) => free.delete(h));
        const metadata = { 'blazar:owner': l.project_id };
        driver.pools.set(r.id, {
          spec: { name: r.id, availabilityZone: `blazar_${r.id}`, metadata },
          hosts: new Set(hosts),
        });
      } else if (r.resource_type === 'virtual:instance') {
        const ir = r.instance_reservation as Record<string, unknown>;
        const group = ir.server_group_id as string | null;
        const metadata: Record<string, string> = {
          reservation: r.id,
          filter_tenant_id: l.project_id,
          'blazar:owner': l.project_id,
          ...(group === null ? {} : { affinity_id: group }),
        };
        driver.pools.set(r.id, {
          spec: { name: r.id, availabilityZone: null, metadata },
          hosts: new Set(hosts),
        });
        driver.flavors.set(r.id, {
          id: r.id,
          name: `reservation:${r.id}`,
          vcpus: ir.vcpus as number,
          ramMb: ir.memory_mb as number,
          diskGb: ir.disk_gb as number,
          extraSpecs: {},
          access: new Set(running ? [l.project_id] : []),
        });
        if (group !== null) {
          const policy = ir.affinity ? 'affinity' : 'anti-affinity';
          driver.groups.set(group, {
            name: `reservation:${r.id}`,
            policy,
            projectId: l.project_id,
          });
        }
        const slots = r.allocations.map((a) => a.hypervisor_hostname);
        driver.sizes.set(
          r.id,
          new Map(running ? hosts.map((h) => [h, slots.filter((s) => s === h).length]) : []),
        );
      }
    }
  }
  driver.pools.set('freepool', {
    spec: { name: 'freepool', availabilityZone: null, metadata: {} },
    hosts: free,
  });
}

describe('adopting the Nova state Blazar left, after the import', () => {
  let source: BlazarDatabase;
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();
  const adopt = async (dryRun: boolean) => {
    const report = await adoptComputeState(t.app, 'freepool', { dryRun });
    if (report === null) throw new Error('nothing adopted');
    return { report, output: describeAdoption(report, 'freepool', dryRun).join('\n') };
  };
  const hostPool = reservation('p1-mixed-ending', 'physical:host');
  const gpu = reservation('p1-gpu-now', 'physical:host');
  const ended = reservation('p1-hosts-rack1-dec', 'physical:host');
  const vms = reservation('p2-vms-affinity-now', 'virtual:instance');
  const later = reservation('p1-vms-antiaffinity-jan', 'virtual:instance');

  beforeAll(async () => {
    source = await loadBlazarDump();
    db = await createTestDatabase();
    const lines: string[] = [];
    const status = await runCli(
      { from: source.url, dryRun: false, verify: false, skipTypes: ['virtual:floatingip'] },
      { DATABASE_URL: db.url },
      (line) => lines.push(line),
    );
    expect({ status, lines }).toMatchObject({ status: 0 });
    asBlazarLeftIt(driver);
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: { PLUGINS: 'physical:host,virtual:instance' },
    });
    t.clock.set(new Date('2030-01-01T00:00:00Z'));
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await source?.drop();
  });

  it('should take Nova as Blazar left it without a mismatch, only completing Climate metadata', async () => {
    const { report, output } = await adopt(true);
    expect(report.found.filter((f) => !f.quiet)).toEqual([]);
    expect(output).toContain('adopt: Nova holds what Climate holds');
    // Three running host reservations lack only filter_tenant_id, which Blazar never sets.
    expect(report.found.map((f) => f.problem).join('\n')).toContain(
      `aggregate ${hostPool.id} of reservation ${hostPool.id}`,
    );
    expect(report.adopted).toEqual({ pools: 7, flavors: 2, serverGroups: 2, classes: 2 });
  });

  it('should report a host in two pools and a missing aggregate by name, and change nothing on a dry run', async () => {
    // Blazar's start of p1-mixed-ending left compute-05 in the freepool too; p1-gpu-now's
    // aggregate was deleted by hand with its hosts; an ended lease's aggregate stayed.
    driver.pools.get('freepool')?.hosts.add('compute-05');
    driver.pools.delete(gpu.id);
    driver.pools.set(ended.id, {
      spec: { name: ended.id, availabilityZone: `blazar_${ended.id}`, metadata: {} },
      hosts: new Set(['compute-03']),
    });
    driver.groups.delete(vms.instance_reservation?.server_group_id as string);
    driver.pools.set('blazar-by-hand', {
      spec: { name: 'blazar-by-hand', availabilityZone: 'blazar_by_hand', metadata: {} },
      hosts: new Set(),
    });
    const before = JSON.stringify(await driver.survey());

    const { output } = await adopt(true);
    expect(output).toContain(
      `MISMATCH host compute-05 is in 2 pools in Nova (${[hostPool.id, 'freepool'].sort().join(', ')}); Climate has it in ${hostPool.id}` +
        ` (would heal: compute-05 removed from freepool)`,
    );
    expect(output).toContain(
      `MISMATCH aggregate ${gpu.id} of reservation ${gpu.id} (lease p1-gpu-now (${lease('p1-gpu-now').id})) is missing in Nova`,
    );
    expect(output).toContain(
      `MISMATCH host compute-01 is in no pool in Nova; Climate has it in ${gpu.id} (would heal: reservation ${gpu.id} started again)`,
    );
    expect(output).toContain(
      `MISMATCH aggregate ${ended.id} of ended reservation ${ended.id} (lease p1-hosts-rack1-dec`,
    );
    expect(output).toContain(
      `MISMATCH host compute-03 is in 2 pools in Nova (${[ended.id, 'freepool'].sort().join(', ')}); Climate has it in freepool`,
    );
    expect(output).toContain(
      `MISMATCH server group ${String(vms.instance_reservation?.server_group_id)} of reservation ${vms.id}`,
    );
    expect(output).toContain(
      "MISMATCH aggregate blazar-by-hand looks like Blazar's but no reservation Climate holds has that id (left alone)",
    );
    expect(output).toContain('dry run: nothing was changed');
    expect(JSON.stringify(await driver.survey())).toBe(before);
  });

  it('should heal each mismatch the way Climate heals, then find none', async () => {
    const groupsBefore = new Set(driver.groups.keys());
    const { report, output } = await adopt(false);
    expect(output).toContain('adopt: 7 mismatch(es), 7 healed; 1 left alone');
    expect(report.remaining).toEqual([]);
    expect(driver.poolOf('compute-05')).toEqual([hostPool.id]);
    expect(driver.poolOf('compute-03')).toEqual(['freepool']);
    expect(driver.pools.has(ended.id)).toBe(false);
    // The missing aggregate is made again as Climate's start makes it, with its hosts.
    const made = driver.pools.get(gpu.id);
    expect(made?.spec?.availabilityZone).toBe(`blazar_${gpu.id}`);
    expect(made?.spec?.metadata['blazar:owner']).toBe(lease('p1-gpu-now').project_id);
    expect([...(made?.hosts ?? [])].sort()).toEqual(hostsOf(gpu).sort());
    for (const h of hostsOf(gpu)) expect(driver.poolOf(h)).toEqual([gpu.id]);
    // The lost group is made again (the only new one); the aggregate names it.
    const newGroups = [...driver.groups.keys()].filter((g) => !groupsBefore.has(g));
    expect(newGroups).toHaveLength(1);
    expect(driver.pools.get(vms.id)?.spec?.metadata.affinity_id).toBe(newGroups[0]);
    // What is not Climate's stays.
    expect(driver.pools.has('blazar-by-hand')).toBe(true);

    const again = await adopt(false);
    expect(again.report.found.filter((f) => f.heals.length > 0)).toEqual([]);
    expect(again.output).toContain('adopt: Nova holds what Climate holds; 1 left alone');
  });

  it('should start and end adopted reservations with the objects Blazar made', async () => {
    const laterGroup = later.instance_reservation?.server_group_id as string;
    const groups = driver.groups.size;
    expect(driver.pools.has(reservation('p2-host-error', 'physical:host').id)).toBe(true);
    t.clock.set(new Date('2030-01-01T02:00:00Z'));
    await t.settle();
    expect(driver.pools.has(hostPool.id)).toBe(false);
    expect(driver.poolOf('compute-05')).toEqual(['freepool']);

    t.clock.set(new Date('2030-01-05T00:00:00Z'));
    await t.settle();
    // The lease whose start failed in Blazar: its end, run by Climate, removes its aggregate.
    expect(driver.pools.has(reservation('p2-host-error', 'physical:host').id)).toBe(false);
    // Blazar's group and flavor for the pending reservation are used, not made again.
    const started = (await t.http.get(`/v1/leases/${lease('p1-vms-antiaffinity-jan').id}`)).body
      .lease;
    expect(started.status).toBe('ACTIVE');
    expect(started.reservations[0].server_group_id).toBe(laterGroup);
    expect(driver.groups.size).toBe(groups - 1); // p2-vms-affinity-now ended on 01-03
    expect(
      driver.flavors.get(later.id)?.access.has(lease('p1-vms-antiaffinity-jan').project_id),
    ).toBe(true);

    t.clock.set(new Date('2030-01-08T00:00:00Z'));
    await t.settle();
    expect(driver.flavors.has(later.id)).toBe(false);
    expect(driver.groups.has(laterGroup)).toBe(false);
    expect(driver.pools.has(later.id)).toBe(false);
    expect(driver.sizes.has(later.id)).toBe(false);
  });

  it('should take --adopt with --dry-run only, and refuse it without a compute service', async () => {
    expect(parseArgs(['--adopt', '--dry-run'])).toMatchObject({ adopt: true, dryRun: true });
    expect(parseArgs(['--adopt', '--from', 'mysql://x/y'])).toContain('--adopt takes only');
    const lines: string[] = [];
    const status = await runCli(
      { from: '', dryRun: false, verify: false, skipTypes: [], adopt: true },
      { DATABASE_URL: db.url },
      (line) => lines.push(line),
    );
    expect(status).toBe(1);
    expect(lines.join('\n')).toContain('COMPUTE_DRIVER is not nova');
  });
});
