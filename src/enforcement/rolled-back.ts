import type { DataSource, EntityManager } from 'typeorm';
import { withTransaction } from '../database/transaction.js';

class Rollback<T> extends Error {
  constructor(readonly value: T) {
    super('rolled back on purpose');
  }
}

/**
 * Runs `fn` in a transaction that is always rolled back, and returns what it found:
 * how a create or update would allocate, without keeping anything (Blazar computes the
 * allocation candidates for its enforcement filters the same way, before writing).
 */
export async function rolledBack<T>(
  dataSource: DataSource,
  fn: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  try {
    await withTransaction(dataSource, async (tx) => {
      throw new Rollback(await fn(tx));
    });
  } catch (error) {
    if (error instanceof Rollback) return error.value as T;
    throw error;
  }
  throw new Error('unreachable: a rolled-back transaction returned');
}
