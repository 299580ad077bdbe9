import type { DataSource } from 'typeorm';
import { refreshHostBusy } from '../src/pools/host-busy.js';

/** Called after each chunk of hosts with how many are done so far. */
export type SeedProgress = (done: number, total: number) => void;

/**
 * How long the seeded allocations last: `today` is a quarter of each host's slice of the
 * year (9-13 days at 10 per host); `blazar` is 1-3 days, as Blazar's own deployments
 * and the side-by-side comparison in issue 11 have them.
 */
export type SeedShape = 'today' | 'blazar';

/** Hosts seeded per round: each round is a few set-based statements, a second or two. */
const CHUNK = 1000;

/**
 * Fills a database for the benchmark with set-based SQL: `hosts` hosts in the freepool
 * (racks of 20, a gpu capability on every tenth) and `perHost` allocations per host
 * spread over a year (lasting as `shape` says), each with its own one-host lease, reservation and events. Works
 * a chunk of hosts at a time and reports after each, so a large seed is never silent.
 */
export async function seed(
  ds: DataSource,
  hosts: number,
  perHost: number,
  from: Date,
  progress: SeedProgress = () => undefined,
  shape: SeedShape = 'today',
): Promise<void> {
  await ds.query(
    `INSERT INTO hosts (hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
                        hypervisor_version, cpu_info, availability_zone, capabilities, created_at)
     SELECT 'bench-' || lpad(i::text, 6, '0'), 'bench-' || lpad(i::text, 6, '0'),
            CASE WHEN i % 2 = 0 THEN 32 ELSE 16 END, 131072, 1000, 'QEMU', 6000000, '', 'nova',
            jsonb_build_object('rack', 'r' || (i / 20), 'gpu', CASE WHEN i % 10 = 0 THEN 'True' ELSE 'False' END),
            now()
       FROM generate_series(1, $1) i`,
    [hosts],
  );
  await ds.query(
    `INSERT INTO resource_properties (resource_type, property_name, private, created_at)
     VALUES ('physical:host', 'rack', false, now()), ('physical:host', 'gpu', false, now())
     ON CONFLICT DO NOTHING`,
  );
  await ds.query(
    `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
     SELECT a.id, h.id, 'freepool', now() FROM hosts h, aggregates a WHERE a.name = 'freepool'`,
  );
  for (let first = 1; first <= hosts; first += CHUNK) {
    const last = Math.min(hosts, first + CHUNK - 1);
    await seedAllocations(ds, [first, last], perHost, from, shape);
    progress(last, hosts);
  }
  // As the manager's maintenance would have, long before.
  await refreshHostBusy(ds.manager);
  // Measured in steady state, not just after a bulk load: without this, autovacuum's
  // first passes over a million fresh rows (and the checkpoint after them) ran beside the
  // first operations and slowed even a lease create that reads no host (2 -> 5 ms).
  await ds.query(`VACUUM (ANALYZE)`);
  // CHECKPOINT needs a superuser or pg_checkpoint; without either the run goes on.
  await ds.query(`CHECKPOINT`).catch(() => undefined);
}

/** The leases, reservations, allocations and events of hosts bench-<first>..bench-<last>. */
async function seedAllocations(
  ds: DataSource,
  [first, last]: [number, number],
  perHost: number,
  from: Date,
  shape: SeedShape,
): Promise<void> {
  const yearMs = 365 * 86_400_000;
  const sliceMs = yearMs / perHost;
  // Durations stay under half a slice, so windows of one host never overlap.
  const [minMs, maxMs] =
    shape === 'blazar'
      ? [Math.min(86_400_000, sliceMs / 4), Math.min(3 * 86_400_000, sliceMs / 2)]
      : [sliceMs / 4, (1.4 * sliceMs) / 4];
  // Slot k of host h: a window inside the k-th slice of the year, never overlapping.
  await ds.query(
    `CREATE UNLOGGED TABLE bench_alloc AS
     SELECT uuid7() AS lease_id, uuid7() AS reservation_id, h.id AS host_id,
            $1::timestamptz + (k * $3::bigint / $2::int + (random() * $3::bigint / $2::int / 2)::bigint)
              * interval '1 millisecond' AS s,
            ($6::float8 + random() * ($7::float8 - $6::float8))::bigint AS dur_ms
       FROM hosts h, generate_series(0, $2::int - 1) k
      WHERE h.hypervisor_hostname BETWEEN $4 AND $5`,
    [from, perHost, yearMs, benchName(first), benchName(last), minMs, maxMs],
  );
  await ds.query(
    `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, created_at)
     SELECT lease_id, 'bench', 'bench', 'bench', s, s + dur_ms * interval '1 millisecond',
            'PENDING', now() FROM bench_alloc`,
  );
  await ds.query(
    `INSERT INTO reservations (id, lease_id, resource_type, status, params, created_at)
     SELECT reservation_id, lease_id, 'physical:host', 'pending',
            '{"min":1,"max":1,"hypervisor_properties":"","resource_properties":"","before_end":"default","on_end":"release","affinity":null,"anti_affinity":null,"extra_projects":[]}',
            now() FROM bench_alloc`,
  );
  await ds.query(
    `INSERT INTO host_allocations (id, reservation_id, host_id, during)
     SELECT uuid7(), b.reservation_id, b.host_id, tstzrange(l.start_at, l.end_at, '[)')
       FROM bench_alloc b JOIN leases l ON l.id = b.lease_id`,
  );
  await ds.query(
    `INSERT INTO events (id, lease_id, event_type, time, status, created_at)
     SELECT uuid7(), l.id, t.type, CASE t.type WHEN 'start_lease' THEN l.start_at ELSE l.end_at END,
            'UNDONE', now()
       FROM bench_alloc b JOIN leases l ON l.id = b.lease_id
            CROSS JOIN (VALUES ('start_lease'), ('end_lease')) t(type)`,
  );
  await ds.query(`DROP TABLE bench_alloc`);
}

const benchName = (i: number) => `bench-${String(i).padStart(6, '0')}`;
