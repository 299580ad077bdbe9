/**
 * The manager's claims of due events (part of the lease tables' owner, lease-tables.ts):
 * prepared statements given as SQL text, their columns chosen by the caller
 * (events/events.repository.ts runs them).
 */
import type { SqlParams } from '../database/sql.js';

/** The shared clock's time ($1), or the database's. */
const NOW = `coalesce($1::timestamptz, now())`;

const DUE = `((e.status = 'UNDONE' AND e.time <= ${NOW} AND (e.retry_at IS NULL OR e.retry_at <= ${NOW}))
   OR (e.status = 'IN_PROGRESS' AND e.claim_expires_at < ${NOW}))`;

/**
 * Locks up to $3 leases with due events (of the first $2 due or expired ones), skipping
 * leases another replica holds and leases whose other event runs; $1 the shared clock.
 */
export const CLAIM_LEASES_SQL = `SELECT l.id FROM leases l
          WHERE l.id IN (
            (SELECT e.lease_id FROM events e
              WHERE e.status = 'UNDONE' AND e.time <= ${NOW} AND (e.retry_at IS NULL OR e.retry_at <= ${NOW})
                -- a lease whose other event runs cannot start another: leave its slot to others
                AND NOT EXISTS (SELECT 1 FROM events r WHERE r.lease_id = e.lease_id
                                 AND r.status = 'IN_PROGRESS' AND r.claim_expires_at >= ${NOW})
              ORDER BY e.time LIMIT $2)
            UNION ALL
            (SELECT e.lease_id FROM events e
              WHERE e.status = 'IN_PROGRESS' AND e.claim_expires_at < ${NOW}
              ORDER BY e.time LIMIT $2))
            AND l.status <> 'DELETING'
          ORDER BY l.id
          LIMIT $3
          FOR UPDATE OF l SKIP LOCKED`;

/**
 * Claims the first due event of each lease of $2 (locked by CLAIM_LEASES_SQL) for owner $3
 * for $4 ms, returning its `columns`; $1 the shared clock.
 */
export function claimEventsSql(columns: string): string {
  return `UPDATE events SET status = 'IN_PROGRESS', claimed_by = $3,
                claim_expires_at = ${NOW} + $4 * interval '1 millisecond',
                attempts = attempts + 1, updated_at = ${NOW}
          WHERE id IN (
            SELECT DISTINCT ON (e.lease_id) e.id FROM events e
             WHERE e.lease_id = ANY($2::uuid[]) AND ${DUE}
               AND NOT EXISTS (SELECT 1 FROM events r WHERE r.lease_id = e.lease_id
                                AND r.status = 'IN_PROGRESS' AND r.claim_expires_at >= ${NOW})
             ORDER BY e.lease_id, e.time,
                      CASE e.event_type WHEN 'start_lease' THEN 0
                                        WHEN 'before_end_lease' THEN 1 ELSE 2 END)
          RETURNING ${columns}`;
}

/** Extends claim of event $1 by owner $2 to $4 ms after $3 (or now); nothing if it was lost. */
export const HEARTBEAT_SQL = `UPDATE events SET claim_expires_at = coalesce($3::timestamptz, now()) + $4 * interval '1 millisecond'
        WHERE id = $1 AND claimed_by = $2 AND status = 'IN_PROGRESS'`;

/**
 * Records a claimed event's outcome, only while `owner` still holds it (compare-and-set),
 * its values bound with `p` (before any statement the caller runs with it).
 */
export function finishEventSql(
  p: SqlParams,
  id: string,
  owner: string,
  outcome: { status: string; error: string | null; retryAt: Date | null; uncounted: boolean },
  now: Date,
): string {
  const [i, by, status, error, retry, at, uncounted] = [
    id,
    owner,
    outcome.status,
    outcome.error,
    outcome.retryAt,
    now,
    outcome.uncounted,
  ].map((v) => p.bind(v));
  return `UPDATE events SET status = ${status}, last_error = ${error}, retry_at = ${retry}::timestamptz,
              claimed_by = NULL, claim_expires_at = NULL, updated_at = ${at}::timestamptz,
              attempts = attempts - CASE WHEN ${uncounted}::boolean THEN 1 ELSE 0 END
        WHERE id = ${i}::uuid AND claimed_by = ${by} AND status = 'IN_PROGRESS'`;
}
