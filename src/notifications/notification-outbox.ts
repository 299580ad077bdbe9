import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
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
