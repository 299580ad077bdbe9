import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { sql, SqlParams } from '../database/sql.js';
import { withFramedTransaction } from '../database/framed-transaction.js';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import { EVENT_COLUMNS, toEvent, type EventRow } from '../leases/lease-rows.js';
import type { EventStatus } from '../model/event-status.js';

/** The shared clock's time ($1), or the database's. */
const NOW = `coalesce($1::timestamptz, now())`;

const DUE = `((e.status = 'UNDONE' AND e.time <= ${NOW} AND (e.retry_at IS NULL OR e.retry_at <= ${NOW}))
   OR (e.status = 'IN_PROGRESS' AND e.claim_expires_at < ${NOW}))`;

export class ClaimLost extends Error {}

@Injectable()
export class EventsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Claims up to `limit` due events, at most one per lease and never one of a lease whose
   * other event runs. Lease rows are locked with SKIP LOCKED first, so replicas split the
   * work instead of waiting on each other; an expired claim (a dead replica) is due again.
   */
  async claimDue(
    shared: Date | null,
    owner: string,
    ttlMs: number,
    limit: number,
  ): Promise<LeaseEvent[]> {
    if (limit <= 0) return [];
    // Two round trips: BEGIN goes with the first statement, COMMIT with the second.
    return withFramedTransaction(this.dataSource, async (tx) => {
      // Due times and claims are judged by one clock for every replica: the database's
      // (now(), the transaction's start) unless the clock is shared.
      const leases = await sql<{ id: string }>(
        tx,
        `SELECT l.id FROM leases l
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
          FOR UPDATE OF l SKIP LOCKED`,
        [shared, limit * 4, limit],
        { prepare: true },
      );
      if (leases.rows.length === 0) return [];
      // A new statement sees claims committed by others before we got the locks.
      const claimed = await sql<EventRow>(
        tx,
        `UPDATE events SET status = 'IN_PROGRESS', claimed_by = $3,
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
          RETURNING ${EVENT_COLUMNS}`,
        [shared, leases.rows.map((r) => r.id), owner, ttlMs],
        { prepare: true, commit: true },
      );
      return claimed.rows.map(toEvent);
    });
  }

  /** Extends a claim while its action runs; false when the claim was lost. */
  async heartbeat(id: string, owner: string, shared: Date | null, ttlMs: number): Promise<boolean> {
    const result = await sql(
      this.dataSource.manager,
      `UPDATE events SET claim_expires_at = coalesce($3::timestamptz, now()) + $4 * interval '1 millisecond'
        WHERE id = $1 AND claimed_by = $2 AND status = 'IN_PROGRESS'`,
      [id, owner, shared, ttlMs],
    );
    return result.affected === 1;
  }

  /**
   * Records the outcome of a claimed event (compare-and-set on the claim). Throws
   * ClaimLost when another replica took the event over, so the caller's transaction
   * rolls back whatever else it wrote.
   */
  async finish(
    tx: EntityManager,
    event: LeaseEvent,
    owner: string,
    outcome: {
      status: EventStatus;
      error?: string | null;
      retryAt?: Date | null;
      /** The attempt does not count (it waited on a busy resource). */
      uncounted?: boolean;
    },
    now: Date,
    /** A statement (its values bound by `p`) run as part of this one. */
    also?: (p: SqlParams) => string,
  ): Promise<void> {
    const p = new SqlParams();
    const [id, by, status, error, retry, at, uncounted] = [
      event.id,
      owner,
      outcome.status,
      outcome.error ?? null,
      outcome.retryAt ?? null,
      now,
      outcome.uncounted === true,
    ].map((v) => p.bind(v));
    const before = also === undefined ? '' : `WITH w AS (${also(p)}) `;
    const result = await sql(
      tx,
      `${before}UPDATE events SET status = ${status}, last_error = ${error}, retry_at = ${retry}::timestamptz,
              claimed_by = NULL, claim_expires_at = NULL, updated_at = ${at}::timestamptz,
              attempts = attempts - CASE WHEN ${uncounted}::boolean THEN 1 ELSE 0 END
        WHERE id = ${id}::uuid AND claimed_by = ${by} AND status = 'IN_PROGRESS'`,
      p.values,
      { prepare: true },
    );
    if (result.affected !== 1) throw new ClaimLost(`event ${event.id} was taken over`);
  }
}
