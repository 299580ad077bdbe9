import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';

export interface Span {
  start: Date;
  end: Date;
}

/** What a reservation occupies: its lease's window plus the cleaning time after it. */
export function occupied(window: Span, cleaningMinutes: number): Span {
  return { start: window.start, end: new Date(window.end.getTime() + cleaningMinutes * 60_000) };
}

/**
 * What occupies hosts: whole-host allocations and instance slots, as
 * (reservation_id, host_id, during). A host with slots cannot be reserved whole.
 */
export const HOST_USAGE = `(SELECT reservation_id, host_id, during FROM host_allocations
   UNION ALL SELECT reservation_id, host_id, during FROM instance_allocations)`;

/** Locks host rows in id order (one order everywhere, so lockers never deadlock). */
export async function lockHosts(tx: EntityManager, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await sql(tx, `SELECT id FROM hosts WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids]);
}
