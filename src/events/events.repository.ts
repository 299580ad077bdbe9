import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { sql, SqlParams } from '../database/sql.js';
import { withFramedTransaction } from '../database/framed-transaction.js';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import { EVENT_COLUMNS, toEvent, type EventRow } from '../leases/lease-rows.js';
import type { EventStatus } from '../model/event-status.js';
import {
  CLAIM_LEASES_SQL,
  claimEventsSql,
  finishEventSql,
  HEARTBEAT_SQL,
} from '../model/lease-tables-claims.js';

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
      const leases = await sql<{ id: string }>(tx, CLAIM_LEASES_SQL, [shared, limit * 4, limit], {
        prepare: true,
      });
      if (leases.rows.length === 0) return [];
      // A new statement sees claims committed by others before we got the locks.
      const claimed = await sql<EventRow>(
        tx,
        claimEventsSql(EVENT_COLUMNS),
        [shared, leases.rows.map((r) => r.id), owner, ttlMs],
        { prepare: true, commit: true },
      );
      return claimed.rows.map(toEvent);
    });
  }

  /** Extends a claim while its action runs; false when the claim was lost. */
  async heartbeat(id: string, owner: string, shared: Date | null, ttlMs: number): Promise<boolean> {
    const result = await sql(this.dataSource.manager, HEARTBEAT_SQL, [id, owner, shared, ttlMs]);
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
    const update = finishEventSql(
      p,
      event.id,
      owner,
      {
        status: outcome.status,
        error: outcome.error ?? null,
        retryAt: outcome.retryAt ?? null,
        uncounted: outcome.uncounted === true,
      },
      now,
    );
    const before = also === undefined ? '' : `WITH w AS (${also(p)}) `;
    const result = await sql(tx, `${before}${update}`, p.values, { prepare: true });
    if (result.affected !== 1) throw new ClaimLost(`event ${event.id} was taken over`);
  }
}
