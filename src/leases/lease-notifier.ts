import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
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

  /** The lease as the API shows it (read in `tx`). */
  async add(tx: EntityManager, type: LeaseNotification, lease: LeaseParts): Promise<void> {
    const wire = toLeaseWire(lease, this.plugins, await describeAll(tx, [lease], this.plugins));
    await this.outbox.addWire(tx, type, wire);
  }
}
