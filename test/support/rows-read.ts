import type { Client } from 'pg';

/** Rows read by scans and index fetches in every table of the database, so far. */
export async function rowsRead(client: Client): Promise<number> {
  await client.query('SELECT pg_stat_clear_snapshot()');
  const r = await client.query<{ n: string }>(
    `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0) AS n
       FROM pg_stat_user_tables`,
  );
  return Number(r.rows[0].n);
}

/** Waits until the app's backends have reported their table statistics (when idle, at the latest 10 s after). */
export const statsFlushed = () => new Promise((r) => setTimeout(r, 11_500));
