import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { LeaseEvent } from '../model/lease-event.entity.js';
import type { EventStatus } from '../model/event-status.js';

const DUE = `((e.status = 'UNDONE' AND e.time <= $1 AND (e.retry_at IS NULL OR e.retry_at <= $1))
   OR (e.status = 'IN_PROGRESS' AND e.claim_expires_at < $1))`;

interface EventRow {
  id: string;
  lease_id: string;
  event_type: LeaseEvent['eventType'];
  time: Date;
  status: EventStatus;
  attempts: number;
  last_error: string | null;
  retry_at: Date | null;
  claimed_by: string | null;
  claim_expires_at: Date | null;
  created_at: Date;
  updated_at: Date | null;
}

function toEvent(row: EventRow): LeaseEvent {
  return Object.assign(new LeaseEvent(), {
    id: row.id,
    leaseId: row.lease_id,
    eventType: row.event_type,
    time: row.time,
    status: row.status,
    attempts: row.attempts,
    lastError: row.last_error,
    retryAt: row.retry_at,
    claimedBy: row.claimed_by,
    claimExpiresAt: row.claim_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });
}

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
    return this.dataSource.transaction(async (tx) => {
      // Due times and claims are judged by one clock for every replica: the database's.
      const now = shared ?? (await sql<{ now: Date }>(tx, `SELECT now() AS now`)).rows[0].now;
      const leases = await sql<{ id: string }>(
        tx,
        `SELECT l.id FROM leases l
          WHERE l.id IN (
            (SELECT e.lease_id FROM events e
              WHERE e.status = 'UNDONE' AND e.time <= $1 AND (e.retry_at IS NULL OR e.retry_at <= $1)
                -- a lease whose other event runs cannot start another: leave its slot to others
                AND NOT EXISTS (SELECT 1 FROM events r WHERE r.lease_id = e.lease_id
                                 AND r.status = 'IN_PROGRESS' AND r.claim_expires_at >= $1)
              ORDER BY e.time LIMIT $2)
            UNION ALL
            (SELECT e.lease_id FROM events e
              WHERE e.status = 'IN_PROGRESS' AND e.claim_expires_at < $1
              ORDER BY e.time LIMIT $2))
            AND l.status <> 'DELETING'
          ORDER BY l.id
          LIMIT $3
          FOR UPDATE OF l SKIP LOCKED`,
        [now, limit * 4, limit],
      );
      if (leases.rows.length === 0) return [];
      // A new statement sees claims committed by others before we got the locks.
      const claimed = await sql<EventRow>(
        tx,
        `UPDATE events SET status = 'IN_PROGRESS', claimed_by = $3, claim_expires_at = $4,
                attempts = attempts + 1, updated_at = $1
          WHERE id IN (
            SELECT DISTINCT ON (e.lease_id) e.id FROM events e
             WHERE e.lease_id = ANY($2::uuid[]) AND ${DUE}
               AND NOT EXISTS (SELECT 1 FROM events r WHERE r.lease_id = e.lease_id
                                AND r.status = 'IN_PROGRESS' AND r.claim_expires_at >= $1)
             ORDER BY e.lease_id, e.time,
                      CASE e.event_type WHEN 'start_lease' THEN 0
                                        WHEN 'before_end_lease' THEN 1 ELSE 2 END)
          RETURNING *`,
        [now, leases.rows.map((r) => r.id), owner, new Date(now.getTime() + ttlMs)],
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
  ): Promise<void> {
    const result = await sql(
      tx,
      `UPDATE events SET status = $3, last_error = $4, retry_at = $5,
              claimed_by = NULL, claim_expires_at = NULL, updated_at = $6,
              attempts = attempts - CASE WHEN $7 THEN 1 ELSE 0 END
        WHERE id = $1 AND claimed_by = $2 AND status = 'IN_PROGRESS'`,
      [
        event.id,
        owner,
        outcome.status,
        outcome.error ?? null,
        outcome.retryAt ?? null,
        now,
        outcome.uncounted === true,
      ],
    );
    if (result.affected !== 1) throw new ClaimLost(`event ${event.id} was taken over`);
  }
}
