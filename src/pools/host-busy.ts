import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { busy, eligible } from './allocation-sql.js';
import { hostsAs } from './hosts.repository.js';

/** pg_advisory_xact_lock key of the host_busy refresh (any constant no other lock uses). */
export const REFRESH_LOCK = 7_310_044;

/** Hosts rebuilt per refresh transaction at most. */
export const REFRESH_BATCH = 5000;

/** The origin of the day and hour buckets of host_busy_counts: UTC midnight. */
export const BUCKET_ORIGIN = `timestamptz '2000-01-01 00:00:00+00'`;

/** SQL: some host is marked for the next refresh (its allocations or its pool changed). */
export const BUSY_MARKED_SQL = `EXISTS (SELECT 1 FROM host_busy_changes)`;

/**
 * SQL adding `sign` times the in-pool stretches of `rows` (a CTE with lo, up, in_pool) to
 * host_busy_counts: each begins in the day and hour of lo and ends in those of
 * up - 1 microsecond (its last instant).
 */
function countStretches(rows: string, sign: 1 | -1): string {
  return `INSERT INTO host_busy_counts (grain, t, starts, ends)
    SELECT g.grain, date_bin(g.width, e.t, ${BUCKET_ORIGIN}), ${sign} * sum(e.s), ${sign} * sum(e.e)
      FROM (SELECT lo AS t, 1 AS s, 0 AS e FROM ${rows} WHERE in_pool
            UNION ALL SELECT up - interval '1 microsecond', 0, 1 FROM ${rows} WHERE in_pool) e
     CROSS JOIN (VALUES ('day', interval '1 day'), ('hour', interval '1 hour')) g(grain, width)
     GROUP BY 1, 2
    ON CONFLICT (grain, t) DO UPDATE SET starts = host_busy_counts.starts + EXCLUDED.starts,
                                         ends = host_busy_counts.ends + EXCLUDED.ends`;
}

/**
 * The stretches of the hosts $1 (int[]) from their allocations, as host_busy has them,
 * each with its host's pool state (host_busy_hosts, rebuilt first).
 */
const FRESH = `SELECT s.host_id, s.lo, s.up, s.prev_end, p.in_pool
  FROM (SELECT host_id, lower(m) AS lo, upper(m) AS up,
               lag(upper(m)) OVER (PARTITION BY host_id ORDER BY lower(m)) AS prev_end
          FROM (SELECT b.host_id, unnest(range_agg(b.during)) AS m
                  FROM ${busy(`'(,)'::tstzrange`)} b
                 WHERE b.host_id = ANY($1::int[])
                 GROUP BY b.host_id) m) s
  JOIN host_busy_hosts p ON p.host_id = s.host_id
 -- Said again for the pool state: without it, it was read whole (40 ms at 100,000 hosts).
 WHERE p.host_id = ANY($1::int[])`;

/**
 * Brings host_busy (each host's busy time as merged stretches, see the HostBusy
 * migration) and its counts (the HostBusyCounts migration) up to date, for the hosts
 * marked in host_busy_changes since the last refresh (their allocations or their pool
 * state changed). Their pool state is read again and their stretches rebuilt from their
 * allocations: those that changed are taken out of the counts and replaced, and the new
 * ones added; the rows of host_busy_changes this refresh read are deleted with it, so a
 * change committed meanwhile stays marked for the next one. Refreshes run one at a time:
 * each, after the lock, sees what the one before it wrote, and only they write these
 * tables, so the counts always sum host_busy as it stands. Returns how many hosts it
 * rebuilt.
 *
 * Run before each capacity plan and availability search and by the manager's
 * maintenance, so that the changes waiting stay few: a create adds one row to
 * host_busy_changes and nothing else.
 */
export async function refreshHostBusy(em: EntityManager): Promise<number> {
  let rebuilt = 0;
  for (;;) {
    // Outside the lock: no row means nothing to do, and rows that a refresh is deleting
    // stay visible until it commits.
    const { rows } = await sql<{ marked: boolean }>(em, `SELECT ${BUSY_MARKED_SQL} AS marked`, [], {
      prepare: true,
    });
    if (!rows[0].marked) return rebuilt;
    const hosts = await em.transaction((tx) => refreshSome(tx));
    rebuilt += hosts;
    // Fewer than a batch: the marks there were when it took them are all done.
    if (hosts < REFRESH_BATCH) return rebuilt;
  }
}

/**
 * One refresh transaction: up to REFRESH_BATCH marked hosts, so that after the migration
 * or a bulk import every statement stays well within the query timeout (the first build
 * of 100,000 hosts in one transaction took 41 s on a loaded machine).
 */
async function refreshSome(tx: EntityManager): Promise<number> {
  await sql(tx, `SELECT pg_advisory_xact_lock(${REFRESH_LOCK})`);
  const marked = await sql<{ hosts: number[] | null }>(
    tx,
    `WITH batch AS (SELECT DISTINCT host_id FROM host_busy_changes ORDER BY host_id LIMIT $1),
          taken AS (DELETE FROM host_busy_changes c USING batch b WHERE c.host_id = b.host_id
                    RETURNING c.host_id)
     SELECT array_agg(DISTINCT host_id) AS hosts FROM taken`,
    [REFRESH_BATCH],
  );
  const hosts = marked.rows[0].hosts ?? [];
  if (hosts.length === 0) return 0;
  await rebuildPoolState(tx, hosts);
  // Only the stretches that changed are rewritten: a create changes one or two of its
  // host's, and the others keep their rows (and their index entries).
  await sql(
    tx,
    `WITH fresh AS MATERIALIZED (${FRESH}),
          old AS (DELETE FROM host_busy b WHERE b.host_id = ANY($1::int[]) AND NOT EXISTS (
                    SELECT 1 FROM fresh f
                     WHERE f.host_id = b.host_id AND f.lo = b.lo AND f.up = b.up
                       AND f.prev_end IS NOT DISTINCT FROM b.prev_end AND f.in_pool = b.in_pool)
                  RETURNING b.lo, b.up, b.in_pool)
     ${countStretches('old', -1)}`,
    [hosts],
  );
  await sql(
    tx,
    `WITH new AS (INSERT INTO host_busy (host_id, lo, up, prev_end, in_pool) ${FRESH}
                  ON CONFLICT (host_id, lo) DO NOTHING RETURNING lo, up, in_pool)
     ${countStretches('new', 1)}`,
    [hosts],
  );
  return hosts.length;
}

/**
 * host_busy_hosts and host_busy_totals for `hosts`: each one's pool state read again
 * (a host deleted leaves), the totals moved by the difference. The statement's CTEs all
 * see the table as it was, so `old` holds the states before the upsert.
 */
async function rebuildPoolState(tx: EntityManager, hosts: number[]): Promise<void> {
  await sql(
    tx,
    `WITH now AS (SELECT h.id AS host_id, (${eligible({ where: 'true', params: [] })}) AS in_pool
                    FROM ${hostsAs('h')} WHERE h.id = ANY($1::int[])),
          old AS (SELECT host_id, in_pool FROM host_busy_hosts WHERE host_id = ANY($1::int[])),
          gone AS (DELETE FROM host_busy_hosts
                    WHERE host_id = ANY($1::int[]) AND host_id NOT IN (SELECT host_id FROM now)),
          kept AS (INSERT INTO host_busy_hosts (host_id, in_pool) SELECT host_id, in_pool FROM now
                   ON CONFLICT (host_id) DO UPDATE SET in_pool = EXCLUDED.in_pool),
          moved AS (SELECT in_pool, sum(d) AS d
                      FROM (SELECT in_pool, 1 AS d FROM now UNION ALL SELECT in_pool, -1 FROM old) c
                     GROUP BY in_pool HAVING sum(d) <> 0)
     UPDATE host_busy_totals t SET hosts = t.hosts + moved.d FROM moved WHERE moved.in_pool = t.in_pool`,
    [hosts],
  );
}
