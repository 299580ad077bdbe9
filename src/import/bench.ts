/**
 * `npm run bench:import -- [--hosts 10000] [--per-host 10] [--mysql URL] [--postgres URL]`:
 * generates a Blazar database (Blazar's own schema, MariaDB) with `hosts` hosts and
 * `per-host` live allocations on each, imports it into a fresh PostgreSQL database with
 * the import command, then verifies it; prints the wall time and peak memory (maximum
 * resident set, from /usr/bin/time) of both. Both databases are dropped at the end.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { Client } from 'pg';

interface BenchOptions {
  hosts: number;
  perHost: number;
  mysql: string;
  postgres: string;
  schema: string;
}

function parse(argv: string[]): BenchOptions {
  const options: BenchOptions = {
    hosts: 10_000,
    perHost: 10,
    mysql: 'mysql://root@127.0.0.1:3306',
    postgres: 'postgres://postgres@127.0.0.1:5432/postgres',
    schema: join(__dirname, '..', '..', '..', 'shared', 'blazar-db', 'blazar-acc44dc9-schema.sql'),
  };
  for (let i = 0; i < argv.length; i += 2) {
    const value = argv[i + 1];
    if (argv[i] === '--hosts') options.hosts = Number(value);
    else if (argv[i] === '--per-host') options.perHost = Number(value);
    else if (argv[i] === '--mysql') options.mysql = value;
    else if (argv[i] === '--postgres') options.postgres = value;
    else if (argv[i] === '--schema') options.schema = value;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return options;
}

/** A uuid made of the host number, the lease number and a kind, so rows link up. */
const id = (kind: string) =>
  `CONCAT(LOWER(LPAD(HEX(h.seq), 8, '0')), '-${kind}-4000-8000-', LOWER(LPAD(HEX(k.seq), 12, '0')))`;

/**
 * Rows as Blazar writes them (MariaDB's sequence tables make them server-side): one
 * lease per allocation, the first of each host's ACTIVE over the reference instant
 * (2030-01-01), the others PENDING after it, three days apart; three events each.
 */
function generation(hosts: number, perHost: number): string[] {
  const h = `seq_1_to_${hosts} h`;
  const hk = `${h} CROSS JOIN seq_0_to_${perHost - 1} k`;
  const start = `DATE_ADD('2029-12-31 00:00:00', INTERVAL k.seq * 3 DAY)`;
  const end = `DATE_ADD(${start}, INTERVAL 2 DAY)`;
  return [
    `INSERT INTO computehosts (id, hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, cpu_info,
       hypervisor_type, hypervisor_version, availability_zone, trust_id, reservable, created_at)
     SELECT h.seq, CONCAT('bench-', LPAD(h.seq, 6, '0')), CONCAT('bench-', LPAD(h.seq, 6, '0')), 32, 131072,
            1000, '{}', 'QEMU', 8002002, 'nova', MD5(h.seq), 1, '2029-01-01 00:00:00' FROM ${h}`,
    `INSERT INTO resource_properties (id, resource_type, property_name, private, created_at) VALUES
       ('00000000-0000-4000-8000-000000000001', 'physical:host', 'rack', 0, '2029-01-01 00:00:00'),
       ('00000000-0000-4000-8000-000000000002', 'physical:host', 'gpu', 0, '2029-01-01 00:00:00')`,
    `INSERT INTO computehost_extra_capabilities (id, computehost_id, property_id, capability_value, created_at)
     SELECT UUID(), h.seq, '00000000-0000-4000-8000-000000000001', CONCAT('r', h.seq DIV 20), '2029-01-01 00:00:00'
       FROM ${h}
     UNION ALL
     SELECT UUID(), h.seq, '00000000-0000-4000-8000-000000000002', IF(h.seq % 10 = 0, 'true', 'false'),
            '2029-01-01 00:00:00' FROM ${h}`,
    `INSERT INTO leases (id, name, user_id, project_id, start_date, end_date, trust_id, status, degraded, created_at)
     SELECT ${id('0001')}, CONCAT('bench-', h.seq, '-', k.seq), MD5('user'), MD5('project'), ${start}, ${end},
            MD5(CONCAT(h.seq, '-', k.seq)), IF(k.seq = 0, 'ACTIVE', 'PENDING'), 0, '2029-12-01 00:00:00'
       FROM ${hk}`,
    `INSERT INTO reservations (id, lease_id, resource_id, resource_type, status, missing_resources,
       resources_changed, created_at)
     SELECT ${id('0002')}, ${id('0001')}, ${id('0003')}, 'physical:host', IF(k.seq = 0, 'active', 'pending'),
            0, 0, '2029-12-01 00:00:00' FROM ${hk}`,
    `INSERT INTO computehost_reservations (id, reservation_id, count_range, hypervisor_properties,
       resource_properties, before_end, aggregate_id, created_at)
     SELECT ${id('0003')}, ${id('0002')}, '1-1', '', '', 'default', NULL, '2029-12-01 00:00:00' FROM ${hk}`,
    `INSERT INTO computehost_allocations (id, compute_host_id, reservation_id, created_at)
     SELECT ${id('0004')}, h.seq, ${id('0002')}, '2029-12-01 00:00:00' FROM ${hk}`,
    `INSERT INTO events (id, lease_id, event_type, time, status, created_at)
     SELECT ${id('0005')}, ${id('0001')}, 'start_lease', ${start}, IF(k.seq = 0, 'DONE', 'UNDONE'),
            '2029-12-01 00:00:00' FROM ${hk}
     UNION ALL SELECT ${id('0006')}, ${id('0001')}, 'before_end_lease', DATE_SUB(${end}, INTERVAL 1 HOUR),
            'UNDONE', '2029-12-01 00:00:00' FROM ${hk}
     UNION ALL SELECT ${id('0007')}, ${id('0001')}, 'end_lease', ${end}, 'UNDONE', '2029-12-01 00:00:00' FROM ${hk}`,
  ];
}

/** Runs a command under /usr/bin/time; its output is passed through, then the figures. */
function timed(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ seconds: number; maxRssKb: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'TIME %e %M', ...args], {
      env,
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /TIME ([\d.]+) (\d+)/.exec(err);
      if (code !== 0 || m === null) reject(new Error(`${args.join(' ')} failed (${code}): ${err}`));
      else resolve({ seconds: Number(m[1]), maxRssKb: Number(m[2]) });
    });
  });
}

async function main(argv: string[]): Promise<void> {
  const o = parse(argv);
  const name = `blazar_bench_${randomBytes(4).toString('hex')}`;
  const root = await createConnection({
    uri: o.mysql,
    multipleStatements: true,
    connectTimeout: 10_000,
  });
  const pgAdmin = new Client({ connectionString: o.postgres, connectionTimeoutMillis: 10_000 });
  await pgAdmin.connect();
  const target = new URL(o.postgres);
  target.pathname = `/${name}`;
  const source = new URL(o.mysql);
  source.pathname = `/${name}`;
  try {
    await root.query(`CREATE DATABASE ${name} CHARACTER SET utf8`);
    await root.query(`USE ${name}`);
    await root.query(readFileSync(o.schema, 'utf8'));
    const t0 = Date.now();
    for (const statement of generation(o.hosts, o.perHost)) await root.query(statement);
    console.log(
      `generated ${o.hosts} hosts, ${o.hosts * o.perHost} leases/allocations in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    await pgAdmin.query(`CREATE DATABASE ${name}`);
    const env = { ...process.env, DATABASE_URL: target.toString() };
    const cli = join(__dirname, 'cli.js');
    const run = await timed(['node', cli, '--from', source.toString()], env);
    const verify = await timed(['node', cli, '--from', source.toString(), '--verify'], env);
    console.log(
      `import: ${run.seconds} s, peak memory ${Math.round(run.maxRssKb / 1024)} MB; ` +
        `verify: ${verify.seconds} s, peak memory ${Math.round(verify.maxRssKb / 1024)} MB ` +
        `(${o.hosts} hosts, ${o.hosts * o.perHost} allocations)`,
    );
  } finally {
    await root.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
    await root.end();
    await pgAdmin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await pgAdmin.end();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
