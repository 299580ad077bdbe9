import type { EntityManager } from 'typeorm';

export interface SqlResult<T> {
  rows: T[];
  affected: number;
}

/** Runs raw SQL and returns rows and the affected count, for UPDATE … RETURNING too. */
export async function sql<T = Record<string, unknown>>(
  em: EntityManager,
  text: string,
  params: unknown[] = [],
): Promise<SqlResult<T>> {
  const own = em.queryRunner === undefined;
  const runner = em.queryRunner ?? em.connection.createQueryRunner();
  try {
    const result = await runner.query(text, params, true);
    return { rows: (result.records ?? []) as T[], affected: result.affected ?? 0 };
  } finally {
    if (own) await runner.release();
  }
}
