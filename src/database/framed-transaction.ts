import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { FramedResult, FramedStatement, Statement } from './framed-statement.js';
import { retried } from './transaction.js';

/** Where a framed transaction's connection stands. */
class Framing {
  /** BEGIN has gone out, and no COMMIT since. */
  open = false;
  /** A COMMIT went out with a statement and succeeded: what came before it is durable. */
  committed = false;
  /** A BEGIN sent alone (before a TypeORM query), which framed statements must follow. */
  begun: Promise<unknown> = Promise.resolve();

  /** Runs `statement`, with BEGIN when no transaction is open and COMMIT when asked. */
  async run(client: unknown, statement: Statement, commit: boolean): Promise<FramedResult> {
    await this.begun;
    const framed = new FramedStatement(statement, { begin: !this.open, commit });
    this.open = true;
    (client as { query(s: FramedStatement): unknown }).query(framed);
    const result = await framed.done;
    if (commit) {
      this.open = false;
      this.committed = true;
    }
    return result;
  }
}

const framings = new WeakMap<QueryRunner, Framing>();

/**
 * TypeORM opens no transaction of its own (for a save, say) on a runner it thinks is in
 * one, and nests any it is asked for as a SAVEPOINT.
 */
function active(runner: QueryRunner, value: boolean): void {
  const state = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
  state.isTransactionActive = value;
  state.transactionDepth = value ? 1 : 0;
}

/** The framed transaction `em` belongs to, if any. */
export function framingOf(em: EntityManager): Framing | undefined {
  return em.queryRunner === undefined ? undefined : framings.get(em.queryRunner);
}

/**
 * `withTransaction` in up to two round trips fewer: BEGIN goes out with the transaction's
 * first prepared statement, and COMMIT with the one `sql` is told to commit (or alone at
 * the end). Statements TypeORM sends on the connection run inside the transaction too (a
 * BEGIN goes first), and TypeORM is told one is active so it never opens its own. After a
 * COMMIT the unit is not retried: it is durable.
 */
export function withFramedTransaction<T>(
  dataSource: DataSource,
  fn: (tx: EntityManager) => Promise<T>,
  attempts = 8,
): Promise<T> {
  let framing = new Framing();
  return retried(
    () => framed(dataSource, fn, (framing = new Framing())),
    attempts,
    () => !framing.committed,
  );
}

/** One attempt of a framed transaction: see withFramedTransaction. */
async function framed<T>(
  dataSource: DataSource,
  fn: (tx: EntityManager) => Promise<T>,
  framing: Framing,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  const query = runner.query.bind(runner);
  try {
    await runner.connect();
    framings.set(runner, framing);
    active(runner, true);
    runner.query = (async (...args: Parameters<QueryRunner['query']>) => {
      if (!framing.open) {
        framing.open = true;
        framing.begun = query('BEGIN');
      }
      await framing.begun;
      const result: unknown = await query(...args);
      return result;
    }) as QueryRunner['query'];
    const result = await fn(runner.manager);
    if (framing.open) {
      framing.open = false;
      await query('COMMIT');
    }
    return result;
  } catch (error) {
    // Also after a failed statement whose BEGIN went with it: harmless when none is open.
    if (framing.open) await query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    framings.delete(runner);
    active(runner, false);
    await runner.release();
  }
}
