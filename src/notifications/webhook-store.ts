import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import type { OutboxRow } from './envelope.js';
import {
  deleteDelivered,
  deleteStrayDeliveries,
  recordDelivered,
  undelivered,
  undeliveredCount,
} from './notification-outbox.js';

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
  pending(url: string, limit: number): Promise<OutboxRow[]> {
    return undelivered(this.db, url, limit);
  }

  backlog(url: string): Promise<number> {
    return undeliveredCount(this.db, url);
  }

  /** A fact whoever records it: the receiver answered 2xx to these notifications. */
  async delivered(url: string, ids: string[], at: Date): Promise<void> {
    await recordDelivered(this.db, url, ids, at);
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
    await deleteStrayDeliveries(this.db);
    return deleted;
  }
}
