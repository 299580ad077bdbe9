import { DataSource, EntityManager, QueryFailedError } from 'typeorm';

/**
 * serialization_failure, deadlock_detected, and exclusion_violation (a concurrent
 * transaction took a resource between our snapshot and our lock): the whole unit of
 * work is retried on a fresh snapshot, where it sees the winner's rows.
 */
export const RETRYABLE = new Set(['40001', '40P01', '23P01']);

export function pgCode(error: unknown): string | undefined {
  if (error instanceof QueryFailedError) {
    return (error.driverError as { code?: string } | undefined)?.code;
  }
  return undefined;
}

/** Runs `fn` in one transaction; retries the whole unit on serialization failures. */
export function withTransaction<T>(
  dataSource: DataSource,
  fn: (tx: EntityManager) => Promise<T>,
  attempts = 8,
): Promise<T> {
  return retried(() => dataSource.transaction(fn), attempts);
}

/**
 * Runs `once` until it succeeds: again, after a growing wait with jitter, while it fails
 * with a RETRYABLE error and `may()` (asked after the failure) allows; at most `attempts`
 * times.
 */
export async function retried<T>(
  once: () => Promise<T>,
  attempts: number,
  may: () => boolean = () => true,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await once();
    } catch (error) {
      if (attempt >= attempts || !RETRYABLE.has(pgCode(error) ?? '') || !may()) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}
