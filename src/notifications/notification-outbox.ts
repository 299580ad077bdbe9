import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import type { OutboxRow } from './envelope.js';
import { sql, type SqlOptions, type SqlParams } from '../database/sql.js';

export type LeaseNotification =
  | 'lease.create'
  | 'lease.update'
  | 'lease.delete'
  | 'lease.event.start_lease'
  | 'lease.event.end_lease'
  | 'lease.event.before_end_lease'
  /** An update moved a done before-end event into the future: it will run again. */
  | 'lease.event.before_end_lease.stop';

/** A lease as the API shows it: the payload, which only the lease use cases build. */
export interface NotifiedLease {
  id: string;
}

/*
 * The SQL of the outbox (notification_outbox) and of its webhook deliveries
 * (webhook_deliveries, which only point at outbox rows): what is written, published,
 * delivered and deleted. webhook-store.ts keeps the receivers.
 */

/**
 * Writes a notification into the outbox in the caller's transaction, so it exists exactly
 * when the change commits. Always, whatever this replica's NOTIFY_URL and WEBHOOK_URLS:
 * the managers send it (the bus and each webhook receiver track their own delivery), and
 * a manager with neither prunes what is older than NOTIFY_RETENTION_HOURS (OutboxPruner).
 */
@Injectable()
export class NotificationOutbox {
  constructor(private readonly clock: Clock) {}

  /**
   * The lease as the caller mapped it for the API (leases/ builds it), plus Blazar's older
   * `lease_id` key.
   */
  async addWire(
    tx: EntityManager,
    type: LeaseNotification,
    wire: NotifiedLease,
    options: SqlOptions = {},
  ): Promise<void> {
    await sql(
      tx,
      `INSERT INTO notification_outbox (message_id, event_type, payload, created_at)
       VALUES ($1, $2, $3, $4)`,
      [newId(), type, JSON.stringify({ ...wire, lease_id: wire.id }), this.clock.now()],
      { ...options, prepare: true },
    );
  }

  /** As `addWire`, a CTE body for a statement whose values `p` binds, written if `go` (an SQL boolean). */
  addWireSql(p: SqlParams, type: LeaseNotification, wire: NotifiedLease, go: string): string {
    const payload = JSON.stringify({ ...wire, lease_id: wire.id });
    return `INSERT INTO notification_outbox (message_id, event_type, payload, created_at)
       SELECT ${p.bind(newId())}::uuid, ${p.bind(type)}, ${p.bind(payload)}::jsonb,
              ${p.bind(this.clock.now())}::timestamptz WHERE ${go}`;
  }
}

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

/** The oldest unpublished rows, locked for this transaction (others skip them). */
export async function unpublished(tx: EntityManager, limit: number): Promise<OutboxRow[]> {
  const { rows } = await sql<OutboxRow>(
    tx,
    `SELECT id, message_id, event_type, payload, created_at FROM notification_outbox
          WHERE NOT published ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

/** Rows the bus published wait for nobody when there are no webhooks. */
export async function deletePublished(em: EntityManager): Promise<void> {
  await sql(em, `DELETE FROM notification_outbox WHERE published`);
}

/** Deletes up to `limit` rows older than `before`, with their deliveries; how many. */
export async function deleteOlder(em: EntityManager, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ n: number }>(
    em,
    `WITH gone AS (
           DELETE FROM notification_outbox
            WHERE id IN (SELECT id FROM notification_outbox WHERE created_at < $1
                          ORDER BY id LIMIT $2)
           RETURNING id),
         deliveries AS (DELETE FROM webhook_deliveries d USING gone WHERE d.outbox_id = gone.id)
         SELECT count(*)::int AS n FROM gone`,
    [before, limit],
  );
  return rows[0]?.n ?? 0;
}

/** The oldest notifications receiver `url` has not taken yet, in outbox order. */
export async function undelivered(
  em: EntityManager,
  url: string,
  limit: number,
): Promise<OutboxRow[]> {
  const { rows } = await sql<OutboxRow>(
    em,
    `SELECT o.id, o.message_id, o.event_type, o.payload, o.created_at
         FROM notification_outbox o
        WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.outbox_id = o.id AND d.receiver = $1)
        ORDER BY o.id LIMIT $2`,
    [url, limit],
  );
  return rows;
}

export async function undeliveredCount(em: EntityManager, url: string): Promise<number> {
  const { rows } = await sql<{ n: number }>(
    em,
    `SELECT count(*)::int AS n FROM notification_outbox o
        WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.outbox_id = o.id AND d.receiver = $1)`,
    [url],
  );
  return rows[0]?.n ?? 0;
}

/** The receiver answered 2xx to these notifications. */
export async function recordDelivered(
  em: EntityManager,
  url: string,
  ids: string[],
  at: Date,
): Promise<void> {
  if (ids.length === 0) return;
  await sql(
    em,
    `INSERT INTO webhook_deliveries (outbox_id, receiver, delivered_at)
       SELECT unnest($1::bigint[]), $2, $3 ON CONFLICT DO NOTHING`,
    [ids, url, at],
  );
}

/** Deliveries of rows already gone. */
export async function deleteStrayDeliveries(em: EntityManager): Promise<void> {
  await sql(
    em,
    `DELETE FROM webhook_deliveries d
        WHERE NOT EXISTS (SELECT 1 FROM notification_outbox o WHERE o.id = d.outbox_id)`,
  );
}
