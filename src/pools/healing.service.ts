import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { sql } from '../database/sql.js';
import { withTransaction } from '../database/transaction.js';
import { Lease } from '../leases/entities/lease.entity.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { Reservation } from '../reservations/entities/reservation.entity.js';
import { HOST_USAGE } from './allocations.repository.js';
import { HostMover, MovedAllocation } from './host-mover.js';

/**
 * Keeps reservations whole when hosts fail: allocations on unreservable hosts move to
 * free hosts that match; what cannot move stays put and flags the reservation
 * `missing_resources` and its lease `degraded`. Flags clear once nothing of the
 * reservation sits on an unreservable host any more.
 */
@Injectable()
export class HealingService {
  private readonly logger = new Logger('healing');

  constructor(
    private readonly dataSource: DataSource,
    private readonly mover: HostMover,
    private readonly plugins: PluginRegistry,
    private readonly clock: Clock,
  ) {}

  async heal(): Promise<MovedAllocation[]> {
    const moved = await withTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      const { rows } = await sql<{ id: number }>(tx, `SELECT id FROM hosts WHERE NOT reservable`);
      const results = await this.mover.evacuate(
        tx,
        rows.map((r) => r.id),
        now,
      );
      const changed = results.filter((m) => m.to !== null && m.status === 'active');
      if (changed.length > 0) {
        await sql(
          tx,
          `UPDATE reservations SET resources_changed = true, updated_at = $2 WHERE id = ANY($1)`,
          [changed.map((m) => m.reservationId), now],
        );
      }
      await this.refreshFlags(tx, now);
      return results;
    });
    await this.resync(moved.filter((m) => m.to !== null && m.status === 'active'));
    if (moved.length > 0) {
      const lost = moved.filter((m) => m.to === null).length;
      this.logger.log({ msg: 'healed', moved: moved.length - lost, missing: lost });
    }
    return moved;
  }

  /** missing_resources: some allocation or slot on an unreservable host; degraded: any such. */
  private async refreshFlags(tx: EntityManager, now: Date): Promise<void> {
    await sql(
      tx,
      `UPDATE reservations r SET missing_resources = m.missing, updated_at = $1
         FROM (SELECT r2.id, EXISTS (
                 SELECT 1 FROM ${HOST_USAGE} a JOIN hosts h ON h.id = a.host_id
                  WHERE a.reservation_id = r2.id AND NOT h.reservable AND upper(a.during) > $1) AS missing
                 FROM reservations r2 WHERE r2.status IN ('pending', 'active')) m
        WHERE m.id = r.id AND r.missing_resources <> m.missing`,
      [now],
    );
    await sql(
      tx,
      `UPDATE leases l SET degraded = d.degraded, updated_at = $1
         FROM (SELECT r.lease_id, bool_or(r.missing_resources) AS degraded
                 FROM reservations r GROUP BY r.lease_id) d
        WHERE d.lease_id = l.id AND l.degraded <> d.degraded`,
      [now],
    );
  }

  /** Active reservations whose hosts changed get their pool brought in line. */
  async resync(moved: MovedAllocation[]): Promise<void> {
    const ids = [...new Set(moved.map((m) => m.reservationId))];
    for (const id of ids) {
      const reservation = await this.dataSource.manager.findOneBy(Reservation, { id });
      if (reservation === null) continue;
      const lease = await this.dataSource.manager.findOneBy(Lease, { id: reservation.leaseId });
      if (lease === null) continue;
      try {
        await this.plugins.get(reservation.resourceType).onStart(reservation, lease);
      } catch (error) {
        this.logger.warn({
          msg: 'pool resync failed; the next heal retries',
          reservation_id: id,
          error: String(error),
        });
      }
    }
  }
}
