import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';

/** The count tables of the GaugeCounts migration, with their two label columns. */
const TABLES = [
  { table: 'pool_host_counts', a: 'pool', b: 'reservable' },
  { table: 'lease_counts', a: 'status', b: 'degraded' },
] as const;

/**
 * Folds each count table's rows into one per label set. Rows appended meanwhile stay for
 * the next time; two compactions at once each fold the rows they deleted, so no count is
 * lost or doubled.
 */
export async function compactGaugeCounts(em: EntityManager): Promise<void> {
  for (const { table, a, b } of TABLES) {
    await sql(
      em,
      `WITH gone AS (DELETE FROM ${table} RETURNING ${a}, ${b}, n)
       INSERT INTO ${table} (${a}, ${b}, n)
       SELECT ${a}, ${b}, sum(n) FROM gone GROUP BY 1, 2 HAVING sum(n) <> 0`,
    );
  }
}

export interface GaugeCounts {
  poolHosts: { pool: string; reservable: boolean; n: number }[];
  leases: { status: string; degraded: boolean; n: number }[];
}

/** The counts as of now: sums of a few rows per label set. */
export async function readGaugeCounts(em: EntityManager): Promise<GaugeCounts> {
  const hosts = await sql<{ pool: string; reservable: boolean; n: number }>(
    em,
    `SELECT pool, reservable, sum(n)::int AS n FROM pool_host_counts GROUP BY 1, 2`,
  );
  const leases = await sql<{ status: string; degraded: boolean; n: number }>(
    em,
    `SELECT status, degraded, sum(n)::int AS n FROM lease_counts GROUP BY 1, 2`,
  );
  return { poolHosts: hosts.rows, leases: leases.rows };
}
