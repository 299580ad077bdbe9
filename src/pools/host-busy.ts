import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { busy } from './allocation-sql.js';

/** pg_advisory_xact_lock key of the host_busy refresh (any constant no other lock uses). */
export const REFRESH_LOCK = 7_310_044;

/**
 * Brings host_busy (each host's busy time as merged stretches, see the HostBusy
 * migration) up to date with the allocations, for the hosts whose allocations changed
 * since the last refresh (host_busy_changes). Their stretches are rebuilt whole from their
 * allocations; the rows of host_busy_changes this refresh read are deleted with it, so a
 * change committed meanwhile stays marked for the next one. Refreshes run one at a time:
 * each, after the lock, sees what the one before it wrote. Returns how many hosts it
 * rebuilt.
 *
 * Run before each capacity plan and by the manager's maintenance, so that the changes
 * waiting stay few: a create adds one row to host_busy_changes and nothing else.
 */
export async function refreshHostBusy(em: EntityManager): Promise<number> {
  // Outside the lock: no row means nothing to do, and rows that a refresh is deleting
  // stay visible until it commits.
  const { rows } = await sql<{ marked: boolean }>(
    em,
    `SELECT EXISTS (SELECT 1 FROM host_busy_changes) AS marked`,
    [],
    { prepare: true },
  );
  if (!rows[0].marked) return 0;
  return em.transaction(async (tx) => {
    await sql(tx, `SELECT pg_advisory_xact_lock(${REFRESH_LOCK})`);
    const marked = await sql<{ hosts: number[] | null }>(
      tx,
      `WITH taken AS (DELETE FROM host_busy_changes RETURNING host_id)
       SELECT array_agg(DISTINCT host_id) AS hosts FROM taken`,
    );
    const hosts = marked.rows[0].hosts ?? [];
    if (hosts.length === 0) return 0;
    await sql(tx, `DELETE FROM host_busy WHERE host_id = ANY($1::int[])`, [hosts]);
    await sql(
      tx,
      `INSERT INTO host_busy (host_id, lo, up, prev_end)
       SELECT host_id, lower(m), upper(m),
              lag(upper(m)) OVER (PARTITION BY host_id ORDER BY lower(m))
         FROM (SELECT b.host_id, unnest(range_agg(b.during)) AS m
                 FROM ${busy(`'(,)'::tstzrange`)} b
                WHERE b.host_id = ANY($1::int[])
                GROUP BY b.host_id) s`,
      [hosts],
    );
    return hosts.length;
  });
}
