import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import type { OutboxRow } from './envelope.js';

/**
 * Deletes the outbox rows every sink is done with (the bus published them, or there is
 * no bus; every configured receiver took them) with their delivery rows. `ids` limits it
 * to those rows; null looks at the whole outbox (the periodic sweep).
 *
 * Each sink calls it after its own commit: of two sinks finishing one row at the same
 * time, the later call sees both commits, so a row is never left behind for good (a
 * crash between the commit and this call leaves it to the sweep).
 */
export async function deleteDelivered(
  em: EntityManager,
  ids: string[] | null,
  receivers: string[],
  busOn: boolean,
): Promise<number> {
  const { rows } = await sql<{ n: number }>(
    em,
    `WITH gone AS (
       DELETE FROM notification_outbox o
        WHERE ($1::bigint[] IS NULL OR o.id = ANY($1::bigint[]))
          AND (o.published OR NOT $3::boolean)
          AND (SELECT count(*) FROM webhook_deliveries d
                WHERE d.outbox_id = o.id AND d.receiver = ANY($2::text[])) = cardinality($2::text[])
       RETURNING o.id),
     deliveries AS (
       DELETE FROM webhook_deliveries d USING gone WHERE d.outbox_id = gone.id)
     SELECT count(*)::int AS n FROM gone`,
    [ids, receivers, busOn],
  );
  return rows[0]?.n ?? 0;
}

/**
 * The bus's end of a published batch, in its transaction: without webhooks the rows go
 * (as they always did); with webhooks they are marked and wait for the receivers.
 */
export async function settlePublished(
  tx: EntityManager,
  ids: string[],
  receivers: string[],
): Promise<void> {
  if (receivers.length === 0) {
    await sql(tx, `DELETE FROM notification_outbox WHERE id = ANY($1::bigint[])`, [ids]);
  } else {
    await sql(tx, `UPDATE notification_outbox SET published = true WHERE id = ANY($1::bigint[])`, [
      ids,
    ]);
  }
}

/** A receiver's state after a pass: failures in a row (0 after a success) and the wait. */
export interface ReceiverState {
  failures: number;
  retryInMs: number;
  /** The pass's failure; null keeps the last one while failures > 0. */
  error: string | null;
}

/**
 * The webhooks' bookkeeping: a receiver's claim and retry state, what it still has to
 * get and what it got. Times are the shared clock (`now` null: the database's).
 */
@Injectable()
export class WebhookStore {
  constructor(private readonly dataSource: DataSource) {}

  private get db(): EntityManager {
    return this.dataSource.manager;
  }

  async register(urls: string[]): Promise<void> {
    await sql(
      this.db,
      `INSERT INTO webhook_receivers (url) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`,
      [urls],
    );
  }

  /**
   * Takes the receiver for `ttlMs` when it is due and nobody holds it (or their claim ran
   * out); returns its failures so far, or null when it is not ours to send to now.
   */
  async claim(url: string, owner: string, now: Date | null, ttlMs: number): Promise<number | null> {
    const { rows } = await sql<{ failures: number }>(
      this.db,
      `UPDATE webhook_receivers
          SET claimed_by = $2,
              claim_expires_at = coalesce($3::timestamptz, now()) + $4 * interval '1 millisecond'
        WHERE url = $1
          AND (retry_at IS NULL OR retry_at <= coalesce($3::timestamptz, now()))
          AND (claimed_by IS NULL OR claim_expires_at < coalesce($3::timestamptz, now()))
        RETURNING failures`,
      [url, owner, now, ttlMs],
    );
    return rows[0]?.failures ?? null;
  }

  /** Moves our claim's expiry to `ttlMs` from now; false when it is no longer ours. */
  async renew(url: string, owner: string, now: Date | null, ttlMs: number): Promise<boolean> {
    const { affected } = await sql(
      this.db,
      `UPDATE webhook_receivers
          SET claim_expires_at = coalesce($3::timestamptz, now()) + $4 * interval '1 millisecond'
        WHERE url = $1 AND claimed_by = $2`,
      [url, owner, now, ttlMs],
    );
    return affected === 1;
  }

  /** The oldest notifications the receiver has not taken yet, in outbox order. */
  async pending(url: string, limit: number): Promise<OutboxRow[]> {
    const { rows } = await sql<OutboxRow>(
      this.db,
      `SELECT o.id, o.message_id, o.event_type, o.payload, o.created_at
         FROM notification_outbox o
        WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.outbox_id = o.id AND d.receiver = $1)
        ORDER BY o.id LIMIT $2`,
      [url, limit],
    );
    return rows;
  }

  async backlog(url: string): Promise<number> {
    const { rows } = await sql<{ n: number }>(
      this.db,
      `SELECT count(*)::int AS n FROM notification_outbox o
        WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.outbox_id = o.id AND d.receiver = $1)`,
      [url],
    );
    return rows[0]?.n ?? 0;
  }

  /** A fact whoever records it: the receiver answered 2xx to these notifications. */
  async delivered(url: string, ids: string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await sql(
      this.db,
      `INSERT INTO webhook_deliveries (outbox_id, receiver, delivered_at)
       SELECT unnest($1::bigint[]), $2, $3 ON CONFLICT DO NOTHING`,
      [ids, url, at],
    );
  }

  /**
   * Ends our claim with the pass's result (compare-and-set: a claim another manager took
   * over is left alone); false when the claim was no longer ours.
   */
  async release(
    url: string,
    owner: string,
    now: Date | null,
    state: ReceiverState,
    deliveredAt: Date | null,
  ): Promise<boolean> {
    const { affected } = await sql(
      this.db,
      `UPDATE webhook_receivers
          SET claimed_by = NULL, claim_expires_at = NULL,
              failures = $4,
              retry_at = CASE WHEN $5::int > 0
                              THEN coalesce($3::timestamptz, now()) + $5 * interval '1 millisecond'
                         END,
              last_error = CASE WHEN $6::text IS NULL AND $4 = 0 THEN NULL
                                ELSE coalesce($6, last_error) END,
              last_delivered_at = coalesce($7, last_delivered_at)
        WHERE url = $1 AND claimed_by = $2`,
      [url, owner, now, state.failures, state.retryInMs, state.error, deliveredAt],
    );
    return affected === 1;
  }

  /** Rows done with, left by a crash or a receiver taken out of the settings; stray deliveries. */
  async sweep(receivers: string[], busOn: boolean): Promise<number> {
    const deleted = await deleteDelivered(this.db, null, receivers, busOn);
    await sql(
      this.db,
      `DELETE FROM webhook_deliveries d
        WHERE NOT EXISTS (SELECT 1 FROM notification_outbox o WHERE o.id = d.outbox_id)`,
    );
    return deleted;
  }
}
