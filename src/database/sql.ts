import { createHash } from 'node:crypto';
import { EntityManager, QueryFailedError } from 'typeorm';
import { framingOf } from './framed-transaction.js';

export interface SqlResult<T> {
  rows: T[];
  affected: number;
  /** The transaction committed with this statement (`commit` in a framed transaction). */
  committed: boolean;
}

export interface SqlOptions {
  /**
   * Run as a named (prepared) statement of the connection: parsed once, and planned once
   * PostgreSQL settles on a generic plan. For statements run often whose text is one of
   * a few (values bound, not written into the text).
   */
  prepare?: boolean;
  /**
   * In a framed transaction (framed-transaction.ts), send COMMIT with this prepared
   * statement: nothing may follow it in the unit. Ignored elsewhere.
   */
  commit?: boolean;
}

/**
 * The values of one statement, bound as it is written: `p.bind(v)` is the next `$n`.
 * Lets several parts (a plugin's, the lease's) make one statement.
 */
export class SqlParams {
  readonly values: unknown[] = [];

  bind(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /** `text` written against its own `$1…$n` (`params`), renumbered after those bound so far. */
  embed(text: string, params: readonly unknown[]): string {
    const offset = this.values.length;
    this.values.push(...params);
    if (offset === 0) return text;
    return text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
  }
}

/** The values of `keys` in `rows`, one array per key: columns to bind for unnest(). */
export function columns<K extends string>(
  rows: Record<K, unknown>[],
  keys: readonly K[],
): unknown[][] {
  return keys.map((k) => rows.map((r) => r[k]));
}

/** Named statements kept per connection at most; past that, statements run unnamed. */
const MAX_PREPARED = 100;
const names = new Map<string, string>();

function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= 4 * MAX_PREPARED) names.clear();
    name = `climate_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

interface PgClient {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<{
    rows: unknown[];
    rowCount: number | null;
  }>;
  connection?: { parsedStatements?: Record<string, string> };
}

/** Runs raw SQL and returns rows and the affected count, for UPDATE … RETURNING too. */
export async function sql<T = Record<string, unknown>>(
  em: EntityManager,
  text: string,
  params: unknown[] = [],
  options: SqlOptions = {},
): Promise<SqlResult<T>> {
  const own = em.queryRunner === undefined;
  const runner = em.queryRunner ?? em.connection.createQueryRunner();
  try {
    if (options.prepare && em.connection.driver.options.type === 'postgres') {
      const client = (await runner.connect()) as PgClient;
      const parsed = client.connection?.parsedStatements;
      const name = statementName(text);
      const named =
        parsed !== undefined && (name in parsed || Object.keys(parsed).length < MAX_PREPARED);
      const statement = named ? { name, text, values: params } : { text, values: params };
      const framing = framingOf(em);
      try {
        if (framing !== undefined) {
          const commit = options.commit === true;
          const result = await framing.run(client, statement, commit);
          return { rows: result.rows as T[], affected: result.rowCount, committed: commit };
        }
        const result = await client.query(statement);
        return { rows: result.rows as T[], affected: result.rowCount ?? 0, committed: false };
      } catch (error) {
        // As TypeORM reports it, so that callers read the SQLSTATE the same way.
        throw new QueryFailedError(text, params, error as Error);
      }
    }
    const result = await runner.query(text, params, true);
    return {
      rows: (result.records ?? []) as T[],
      affected: result.affected ?? 0,
      committed: false,
    };
  } finally {
    if (own) await runner.release();
  }
}
