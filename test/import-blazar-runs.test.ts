import { migrate, openDatabase } from '../src/database/data-source.js';
import { runCli, type CliOptions } from '../src/import/cli.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { BlazarDatabase, expectedBlazar, loadBlazarDump } from './support/mariadb.js';

const FLOATING = 'virtual:floatingip';
const expected = expectedBlazar();
const leaseNamed = (name: string) => expected.leases.find((l) => l.name === name)!;

/** Every row of the tables an import writes, to compare two states of a database. */
async function contents(url: string): Promise<string | null> {
  const pg = await connect(url);
  try {
    const { rows } = await pg.query(`SELECT to_regclass('leases') IS NOT NULL AS has`);
    if (!rows[0].has) return null;
    const tables = [
      'hosts',
      'resource_properties',
      'leases',
      'reservations',
      'events',
      'host_allocations',
      'instance_allocations',
      'aggregates',
      'aggregate_hosts',
      'floatingips',
      'floatingip_allocations',
    ];
    const out: Record<string, unknown> = {};
    for (const table of tables) {
      out[table] = (await pg.query(`SELECT * FROM ${table} ORDER BY 1, 2`)).rows;
    }
    return JSON.stringify(out);
  } finally {
    await pg.end();
  }
}

async function count(url: string, table: string): Promise<number> {
  const pg = await connect(url);
  try {
    return Number((await pg.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  } finally {
    await pg.end();
  }
}

describe('import runs: dry run, second run, verify, refusals', () => {
  let source: BlazarDatabase;
  const databases: TestDatabase[] = [];
  const sources: BlazarDatabase[] = [];

  async function target(): Promise<TestDatabase> {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  }

  async function run(
    from: BlazarDatabase,
    db: TestDatabase,
    options: Partial<CliOptions> = {},
    env: Record<string, string> = {},
  ) {
    const lines: string[] = [];
    const status = await runCli(
      { from: from.url, dryRun: false, verify: false, skipTypes: [], ...options },
      { DATABASE_URL: db.url, ...env },
      (line) => lines.push(line),
    );
    return { status, output: lines.join('\n') };
  }

  async function changedSource(): Promise<BlazarDatabase> {
    const s = await loadBlazarDump();
    sources.push(s);
    return s;
  }

  beforeAll(async () => {
    source = await changedSource();
  });
  afterAll(async () => {
    for (const db of databases) await db.drop();
    for (const s of sources) await s.drop();
  });

  it('should name an unsupported reservation type and its leases and write nothing when it is not skipped', async () => {
    const s = await changedSource();
    const lease = leaseNamed('p2-vms-dec');
    await s.query(`UPDATE reservations SET resource_type = 'flavor:instance' WHERE lease_id = ?`, [
      lease.id,
    ]);
    const db = await target();
    const res = await run(s, db, { skipTypes: [] });
    expect(res.status).toBe(1);
    expect(res.output).toContain('reservation type flavor:instance is not supported by Climate');
    expect(res.output).toContain(`lease p2-vms-dec (${lease.id})`);
    // virtual:floatingip is imported now.
    expect(res.output).not.toContain(`type ${FLOATING} is not supported`);
    expect(await contents(db.url)).toBeNull();
    // Skipped by name, the rest is imported; the registered addresses still are.
    const skipped = await target();
    const rest = await run(s, skipped, { skipTypes: ['flavor:instance', FLOATING] });
    expect(rest.status).toBe(0);
    expect(await count(skipped.url, 'floatingips')).toBe(expected.floatingips.length);
    expect(await count(skipped.url, 'floatingip_allocations')).toBe(0);
  });

  it('should refuse a reservation type this Climate does not enable (PLUGINS)', async () => {
    const db = await target();
    const res = await run(source, db, {}, { PLUGINS: 'physical:host' });
    expect(res.status).toBe(1);
    expect(res.output).toContain(
      'reservation type virtual:instance is not supported by Climate (it takes physical:host with this PLUGINS)',
    );
    expect(res.output).toContain(
      `lease p2-vms-affinity-now (${leaseNamed('p2-vms-affinity-now').id})`,
    );
    expect(await contents(db.url)).toBeNull();
  });

  it('should refuse a capability name a host registration would refuse', async () => {
    const s = await changedSource();
    await s.query(
      `UPDATE resource_properties SET property_name = 'nic speed' WHERE property_name = 'nic_speed'`,
    );
    const db = await target();
    const res = await run(s, db);
    expect(res.status).toBe(1);
    expect(res.output).toContain('Malformed parameter nic speed');
    expect(await contents(db.url)).toBeNull();
  });

  it('should report what it would import and write nothing when asked for a dry run', async () => {
    const empty = await target();
    const dry = await run(source, empty, { dryRun: true });
    expect(dry.status).toBe(0);
    expect(dry.output).toContain('would import: 12 host(s), 4 propert(ies), 12 lease(s)');
    expect(dry.output).toContain(
      'floating IPs: 7 address(es) to import, 0 already in Climate; 4 allocation(s)',
    );
    expect(dry.output).toContain('dry run: nothing was written');
    expect(await contents(empty.url)).toBeNull();

    // On a migrated database too: not one row.
    const migrated = await target();
    const opened = await openDatabase({ databaseUrl: migrated.url, dataDir: '' }, 1);
    await migrate(opened.dataSource);
    await opened.close();
    const before = await contents(migrated.url);
    expect(before).not.toBeNull();
    expect(await run(source, migrated, { dryRun: true })).toMatchObject({ status: 0 });
    expect(await contents(migrated.url)).toBe(before);
    expect(await count(migrated.url, 'leases')).toBe(0);
  });

  it('should tell its progress, change nothing on a second run, and verify the result', async () => {
    const db = await target();
    const first = await run(source, db);
    expect(first.status).toBe(0);
    expect(first.output).toContain('hosts: 12/12');
    expect(first.output).toContain('leases: 12/12');
    expect(await count(db.url, 'floatingips')).toBe(expected.floatingips.length);
    expect(await count(db.url, 'floatingip_allocations')).toBe(4);
    const after = await contents(db.url);
    const second = await run(source, db);
    expect(second).toMatchObject({ status: 0 });
    expect(second.output).toContain('imported: 0 host(s), 0 propert(ies), 0 lease(s)');
    expect(second.output).toContain('floating IPs: 0 address(es) imported, 7 already in Climate');
    expect(await contents(db.url)).toBe(after);
    expect(await run(source, db, { verify: true })).toMatchObject({ status: 0 });
  });

  it('should find a difference between Blazar and Climate when verifying, and refuse to import over it', async () => {
    const db = await target();
    expect((await run(source, db)).status).toBe(0);
    const lease = leaseNamed('p2-hosts-jan');
    const pg = await connect(db.url);
    try {
      await pg.query(
        `UPDATE events SET status = 'DONE' WHERE lease_id = $1 AND event_type = 'start_lease'`,
        [lease.id],
      );
    } finally {
      await pg.end();
    }
    const verify = await run(source, db, { verify: true });
    expect(verify.status).toBe(1);
    expect(verify.output).toMatch(
      new RegExp(
        `DIFFERENT lease p2-hosts-jan \\(${lease.id}\\): events\\[\\d\\]\\.status: Blazar "UNDONE", Climate "DONE"`,
      ),
    );
    const again = await run(source, db);
    expect(again.status).toBe(1);
    expect(again.output).toContain(
      `lease p2-hosts-jan (${lease.id}) is already in Climate and differs`,
    );

    // A change on Blazar's side is found too.
    const s = await changedSource();
    const host = expected.hosts.find((h) => h.hypervisor_hostname === 'compute-03')!;
    await s.query(`UPDATE computehosts SET vcpus = 8 WHERE id = ?`, [host.id]);
    const other = await run(s, db, { verify: true });
    expect(other.status).toBe(1);
    expect(other.output).toContain('DIFFERENT host compute-03: vcpus: Blazar 8, Climate 64');
  });

  it('should find a floating IP or a floating-IP allocation that differs when verifying', async () => {
    const db = await target();
    expect((await run(source, db)).status).toBe(0);
    const fip = expected.floatingips.find((f) => f.floating_ip_address === '203.0.113.14')!;
    const jan = leaseNamed('p2-fip-jan');
    const pg = await connect(db.url);
    try {
      await pg.query(`UPDATE floatingips SET reservable = false WHERE id = $1`, [fip.id]);
      await pg.query(`DELETE FROM floatingip_allocations WHERE reservation_id = $1`, [
        jan.reservations[0].id,
      ]);
    } finally {
      await pg.end();
    }
    const verify = await run(source, db, { verify: true });
    expect(verify.status).toBe(1);
    expect(verify.output).toContain(
      `DIFFERENT floating IP 203.0.113.14 (${fip.id}): reservable: Blazar true, Climate false`,
    );
    expect(verify.output).toContain(
      `DIFFERENT lease p2-fip-jan (${jan.id}): floatingIpAllocations`,
    );
    const again = await run(source, db);
    expect(again.status).toBe(1);
    expect(again.output).toContain(
      `floating IP 203.0.113.14 (${fip.id}) is already in Climate and differs`,
    );
  });

  it('should refuse an overlap in the source, naming both leases, and write nothing', async () => {
    const s = await changedSource();
    // p2-host-error (compute-09, 12-30 to 01-02) also on compute-01, which p1-gpu-now holds.
    const error = leaseNamed('p2-host-error');
    const gpu = leaseNamed('p1-gpu-now');
    await s.query(
      `INSERT INTO computehost_allocations (id, compute_host_id, reservation_id, created_at)
       VALUES ('0b8f1b0e-52a4-4c7e-9f43-000000000001', '1', ?, NOW())`,
      [error.reservations[0].id],
    );
    const db = await target();
    const res = await run(s, db);
    expect(res.status).toBe(1);
    expect(res.output).toMatch(
      /host compute-01: lease (p1-gpu-now|p2-host-error) .* and lease (p1-gpu-now|p2-host-error) .* overlap/,
    );
    expect(res.output).toContain(gpu.id);
    expect(res.output).toContain(error.id);
    expect(await count(db.url, 'leases')).toBe(0);
    expect(await count(db.url, 'hosts')).toBe(0);
  });

  it('should take an IPv6 address written as Blazar keeps it, and find it the same on a second run', async () => {
    const s = await changedSource();
    const fip = expected.floatingips.find((f) => f.floating_ip_address === '203.0.113.14')!;
    await s.query(`UPDATE floatingips SET floating_ip_address = '2001:DB8:0:0::14' WHERE id = ?`, [
      fip.id,
    ]);
    const db = await target();
    expect((await run(s, db)).status).toBe(0);
    const second = await run(s, db);
    expect(second.status).toBe(0);
    expect(second.output).toContain('floating IPs: 0 address(es) imported, 7 already in Climate');
    expect(await run(s, db, { verify: true })).toMatchObject({ status: 0 });
    const pg = await connect(db.url);
    try {
      const { rows } = await pg.query(
        `SELECT host(floating_ip_address) AS a FROM floatingips WHERE id = $1`,
        [fip.id],
      );
      expect(rows).toEqual([{ a: '2001:db8::14' }]);
    } finally {
      await pg.end();
    }
  });

  it('should refuse a floating-IP overlap in the source, naming both leases, and write nothing', async () => {
    const s = await changedSource();
    // p1-fips-dec held 203.0.113.12 until 12-13; to 12-31 12:00 it meets p1-mixed-ending's.
    const dec = leaseNamed('p1-fips-dec');
    const mixed = leaseNamed('p1-mixed-ending');
    await s.query(`UPDATE leases SET end_date = '2029-12-31 12:00:00' WHERE id = ?`, [dec.id]);
    const db = await target();
    const res = await run(s, db);
    expect(res.status).toBe(1);
    expect(res.output).toContain(
      `floating IP 203.0.113.12: lease p1-fips-dec (${dec.id}) and lease p1-mixed-ending (${mixed.id}) overlap`,
    );
    expect(await count(db.url, 'leases')).toBe(0);
    expect(await count(db.url, 'floatingips')).toBe(0);
  });

  it('should refuse a floating-IP allocation off its reservation network, and write nothing', async () => {
    const s = await changedSource();
    const jan = leaseNamed('p2-fip-jan');
    const other = expected.floatingips.find((f) => f.floating_ip_address === '203.0.113.14')!;
    await s.query(`UPDATE floatingip_allocations SET floatingip_id = ? WHERE reservation_id = ?`, [
      other.id,
      jan.reservations[0].id,
    ]);
    const db = await target();
    const res = await run(s, db);
    expect(res.status).toBe(1);
    expect(res.output).toContain(`lease p2-fip-jan (${jan.id})`);
    expect(res.output).toContain('allocated floating IP 203.0.113.14 is not on network');
    expect(await contents(db.url)).toBeNull();
  });

  it('should skip soft-deleted rows when the schema has them', async () => {
    const s = await changedSource();
    const gone = leaseNamed('p2-vms-dec');
    await s.query(`ALTER TABLE leases ADD COLUMN deleted varchar(36) NOT NULL DEFAULT '0'`);
    await s.query(`UPDATE leases SET deleted = id WHERE id = ?`, [gone.id]);
    const db = await target();
    const res = await run(s, db);
    expect(res.status).toBe(0);
    expect(res.output).toContain('leases: 1 soft-deleted row(s) skipped');
    const pg = await connect(db.url);
    try {
      const { rows } = await pg.query(`SELECT id FROM leases`);
      expect(rows.map((r) => r.id)).not.toContain(gone.id);
      expect(rows).toHaveLength(expected.leases.length - 1);
    } finally {
      await pg.end();
    }
  });

  it("should carry Blazar's user-defined events as Climate's, shown and never run, and verify them", async () => {
    const s = await changedSource();
    const lease = leaseNamed('p2-hosts-jan');
    // what `blazar lease-create --event event_type=notification,event_date=…` leaves
    const cli = '0b8f2c1e-5d3a-4e6f-9a7b-1c2d3e4f5a6b';
    const timed = '1c9e3d2f-6e4b-4f70-8b8c-2d3e4f5a6b7c';
    await s.query(
      `INSERT INTO events (id, lease_id, event_type, time, status, created_at)
       VALUES (?, ?, 'notification', NULL, NULL, '2029-12-01 08:00:00'),
              (?, ?, 'start_lease', '2030-01-02 10:00:00', NULL, '2029-12-01 08:00:00')`,
      [cli, lease.id, timed, lease.id],
    );
    const db = await target();
    expect((await run(s, db)).status).toBe(0);
    const pg = await connect(db.url);
    try {
      const { rows } = await pg.query(`SELECT user_events FROM leases WHERE id = $1`, [lease.id]);
      expect(rows[0].user_events).toEqual([
        {
          id: cli,
          event_type: 'notification',
          time: null,
          status: null,
          created_at: '2029-12-01T08:00:00.000Z',
        },
        {
          id: timed,
          event_type: 'start_lease',
          time: '2030-01-02T10:00:00.000Z',
          status: null,
          created_at: '2029-12-01T08:00:00.000Z',
        },
      ]);
      // the lease's own events only in the table the manager runs
      const own = await pg.query(`SELECT count(*) AS n FROM events WHERE id = ANY($1::uuid[])`, [
        [cli, timed],
      ]);
      expect(Number(own.rows[0].n)).toBe(0);
    } finally {
      await pg.end();
    }
    expect(await run(s, db, { verify: true })).toMatchObject({ status: 0 });
    expect((await run(s, db)).output).toContain('imported: 0 host(s), 0 propert(ies), 0 lease(s)');
  });
});
