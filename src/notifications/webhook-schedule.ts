/** Pure rules of webhook delivery: per-lease order and the retry delay. */

export interface LeaseMessage {
  payload: { id?: unknown };
}

/**
 * The batch split into one chain per lease, each in outbox order: chains may be sent in
 * parallel, a chain's messages one after the other, so a receiver sees each lease's
 * notifications in order.
 */
export function chainsByLease<T extends LeaseMessage>(rows: T[]): T[][] {
  const chains = new Map<unknown, T[]>();
  for (const row of rows) {
    const key = row.payload.id ?? row;
    const chain = chains.get(key);
    if (chain === undefined) chains.set(key, [row]);
    else chain.push(row);
  }
  return [...chains.values()];
}

const FIRST_RETRY_MS = 1000;
export const MAX_RETRY_MS = 60_000;

/** Wait before the next attempt after `failures` failed passes in a row: 1 s, 2 s, … 60 s. */
export function retryDelayMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(failures - 1, 16));
}
