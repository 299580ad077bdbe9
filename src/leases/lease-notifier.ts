import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql, SqlParams, type SqlOptions } from '../database/sql.js';
import {
  NotificationOutbox,
  type LeaseNotification,
} from '../notifications/notification-outbox.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { describeAll, toLeaseWire, type LeaseParts } from './lease.mapper.js';

/** Builds a lease's notification body here, so the outbox only stores what it is given. */
@Injectable()
export class LeaseNotifier {
  constructor(
    private readonly outbox: NotificationOutbox,
    private readonly plugins: PluginRegistry,
  ) {}

  /**
   * The lease as the API shows it (read in `tx`). `options.with`, a statement whose values
   * its `p` binds, runs in the same statement (one round trip fewer).
   */
  async add(
    tx: EntityManager,
    type: LeaseNotification,
    lease: LeaseParts,
    options: SqlOptions & { with?: (p: SqlParams) => string } = {},
  ): Promise<void> {
    const wire = toLeaseWire(lease, this.plugins, await describeAll(tx, [lease], this.plugins));
    const { with: before, ...rest } = options;
    if (before === undefined) return this.outbox.addWire(tx, type, wire, rest);
    const p = new SqlParams();
    const text = `WITH w AS (${before(p)}) ${this.outbox.addWireSql(p, type, wire, 'true')}`;
    await sql(tx, text, p.values, { ...rest, prepare: true });
  }
}
