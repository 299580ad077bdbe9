/**
 * The manager's hot statements on the lease tables (part of their owner, lease-tables.ts):
 * each is prepared once and sent with the transaction's BEGIN or COMMIT, so they are
 * given as SQL text with their columns chosen by the caller.
 */
import type { SqlParams } from '../database/sql.js';
import type { LeaseStatus } from './lease-status.js';

/** Sets a lease's status: a statement (or CTE body) whose values `p` binds. */
export function setStatusSql(p: SqlParams, id: string, status: LeaseStatus, now: Date): string {
  const [s, t, i] = [p.bind(status), p.bind(now), p.bind(id)];
  return `UPDATE leases SET status = ${s}, updated_at = ${t}::timestamptz WHERE id = ${i}::uuid`;
}

/** `columns` of the lease whose id is $1, its row locked for the transaction. */
export function lockLeaseSql(columns: string): string {
  return `SELECT ${columns} FROM leases WHERE id = $1 FOR UPDATE`;
}

/** Sets the lease's status and returns `columns` of its reservations, oldest first. */
export function enterStatusSql(
  p: SqlParams,
  id: string,
  status: LeaseStatus,
  now: Date,
  columns: string,
): string {
  const set = setStatusSql(p, id, status, now);
  return `WITH s AS (${set})
     SELECT ${columns} FROM reservations
      WHERE lease_id = ${p.bind(id)}::uuid ORDER BY created_at, id`;
}

/** Marks reservation $1 deleted at $2 (taking its row lock first, as healing does). */
export const RESERVATION_DELETED_SQL = `UPDATE reservations SET status = 'deleted', updated_at = $2 WHERE id = $1`;

/** Marks reservations `ids` active, only from pending (an ended one is not revived). */
export function activateReservationsSql(p: SqlParams, ids: string[], now: Date): string {
  return `UPDATE reservations SET status = 'active', updated_at = ${p.bind(now)}::timestamptz
           WHERE id = ANY(${p.bind(ids)}::uuid[]) AND status = 'pending'`;
}

/** `columns` of lease $1's reservations, in creation order. */
export function reservationsOfSql(columns: string): string {
  return `SELECT ${columns} FROM reservations WHERE lease_id = $1 ORDER BY created_at, id`;
}

/** Lease $1's reservations (in creation order) and events, each as a JSON array. */
export const LEASE_PARTS_SQL = `SELECT (SELECT coalesce(json_agg(r ORDER BY r.created_at, r.id), '[]')
            FROM reservations r WHERE r.lease_id = $1) AS reservations,
         (SELECT coalesce(json_agg(e), '[]') FROM events e WHERE e.lease_id = $1) AS events`;
