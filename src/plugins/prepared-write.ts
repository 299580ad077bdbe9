import type { EntityManager } from 'typeorm';
import { sql, SqlParams } from '../database/sql.js';
import type { PreparedReservation } from './resource-plugin.js';

/** What a statement adds beside the prepared reservations: more CTEs and result columns. */
export interface StatementParts {
  /** `name AS (…)` clauses; writes among them must be gated on `go`. */
  ctes: string[];
  /** `expression AS name` of the one result row. */
  columns: string[];
}

/**
 * A recheck failed on a statement that went out with COMMIT: nothing was written and the
 * transaction is over (its locks gone), so the choice is made again in a new one.
 */
export class StaleChoice extends Error {
  constructor() {
    super('a prepared choice went stale after its transaction committed nothing');
  }
}

/** Rounds after which a recheck that keeps failing is a bug, not a race. */
const MAX_ROUNDS = 10;

/**
 * One statement that writes every prepared reservation (and `more`'s CTEs) only if all
 * their rechecks hold: `go` is true exactly then. Its one row has `s<i>`, the value of
 * the i-th recheck (NULL when it holds), and `more`'s columns.
 */
export function gatedStatement(
  prepared: PreparedReservation[],
  more: (p: SqlParams, go: string) => StatementParts = () => ({ ctes: [], columns: [] }),
): { text: string; values: unknown[] } {
  const p = new SqlParams();
  const rechecks = prepared.map((r, i) =>
    r.recheck === undefined ? `NULL::text AS s${i}` : `(${r.recheck(p)}) AS s${i}`,
  );
  const checked = prepared.some((r) => r.recheck !== undefined);
  const ctes = checked
    ? [
        `chk AS (SELECT ${rechecks.join(', ')})`,
        `go AS (SELECT ${prepared.map((_, i) => `s${i} IS NULL`).join(' AND ')} AS ok FROM chk)`,
      ]
    : [`go AS (SELECT true AS ok)`];
  const go = '(SELECT ok FROM go)';
  prepared.forEach((r, i) => {
    r.write(p, go).forEach((w, j) => ctes.push(`w${i}_${j} AS (${w})`));
  });
  const extra = more(p, go);
  ctes.push(...extra.ctes);
  const columns = checked ? ['chk.*', ...extra.columns] : [...rechecks, ...extra.columns];
  const from = checked ? ' FROM chk' : '';
  return {
    text: `WITH ${ctes.join(',\n')}\nSELECT ${columns.join(', ')}${from}`,
    values: p.values,
  };
}

/**
 * Runs the gated statement in `tx` until every recheck holds, asking the reservations
 * whose choice went stale for another (`again`). Returns the result row and the
 * prepared reservations as finally written. With `commit` (the last statement of a framed
 * transaction) a stale choice throws StaleChoice instead, when the COMMIT went with it: the
 * caller must then have written nothing else in the transaction.
 */
export async function writeGated<T extends object>(
  tx: EntityManager,
  prepared: PreparedReservation[],
  more?: (p: SqlParams, go: string) => StatementParts,
  commit = false,
): Promise<{ row: T; prepared: PreparedReservation[] }> {
  let current = [...prepared];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const { text, values } = gatedStatement(current, more);
    const result = await sql<Record<string, unknown>>(tx, text, values, { prepare: true, commit });
    const row = result.rows[0];
    const stale = current.map((_, i) => row[`s${i}`] ?? null);
    if (stale.every((s) => s === null)) return { row: row as T, prepared: current };
    if (result.committed) throw new StaleChoice();
    const next: PreparedReservation[] = [];
    for (const [i, r] of current.entries()) {
      if (stale[i] === null) next.push(r);
      else if (r.again === undefined) throw new Error('a failed recheck needs `again`');
      else next.push(await r.again(tx, stale[i]));
    }
    current = next;
  }
  throw new Error(`allocation rechecks still failing after ${MAX_ROUNDS} rounds`);
}
