import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { sql } from '../database/sql.js';
import { unreservableHostIds } from '../pools/hosts.repository.js';
import { markResourcesChanged, refreshDegraded, refreshMissing } from '../model/lease-tables.js';
import { withTransaction } from '../database/transaction.js';
import { Lease } from '../model/lease.entity.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { Reservation } from '../model/reservation.entity.js';
import { holdsUnreservableHost } from '../pools/host-usage.js';
import type { Evacuation, MovedAllocation } from '../pools/evacuation.js';
import { Metrics } from '../observability/metrics.js';

/** pg_advisory_xact_lock key of the heal (any constant no other lock uses). */
const HEAL_LOCK = 7_310_042;

/**
 * Keeps reservations whole when hosts fail: allocations on unreservable hosts move to
 * free hosts that match; what cannot move stays put and flags the reservation
 * `missing_resources` and its lease `degraded`. Flags clear once nothing of the
 * reservation sits on an unreservable host any more.
 */
@Injectable()
export class HealingService implements Evacuation {
  private readonly logger = new Logger('healing');

  constructor(
    private readonly dataSource: DataSource,
    private readonly plugins: PluginRegistry,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  async heal(): Promise<MovedAllocation[]> {
    const moved = await withTransaction(this.dataSource, async (tx) => {
      // One heal at a time across replicas: two would fight over the same rows.
      await sql(tx, `SELECT pg_advisory_xact_lock(${HEAL_LOCK})`);
      const now = this.clock.now();
      const results = await this.evacuate(tx, await unreservableHostIds(tx), now);
      const changed = results.filter((m) => m.to !== null && m.status === 'active');
      if (changed.length > 0) {
        await markResourcesChanged(
          tx,
          changed.map((m) => m.reservationId),
          now,
        );
      }
      await this.refreshFlags(tx, now);
      return results;
    });
    await this.resync([
      ...moved.filter((m) => m.to !== null && m.status === 'active').map((m) => m.reservationId),
      ...(await this.outOfLine()),
    ]);
    if (moved.length > 0) {
      const lost = moved.filter((m) => m.to === null).length;
      // What stays on a failed host is tried again by every heal, and counted again.
      this.metrics.healingMoves.inc({ result: 'moved' }, moved.length - lost);
      this.metrics.healingMoves.inc({ result: 'unmovable' }, lost);
      this.logger.log({ msg: 'healed', moved: moved.length - lost, missing: lost });
    }
    return moved;
  }

  /** Each plugin moves its own reservations off the hosts, in PLUGINS order. */
  async evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]> {
    const moved: MovedAllocation[] = [];
    for (const plugin of this.plugins.all()) {
      if (plugin.evacuate) moved.push(...(await plugin.evacuate(tx, hostIds, now)));
    }
    return moved;
  }

  /** missing_resources: some allocation or slot on an unreservable host; degraded: any such. */
  private async refreshFlags(tx: EntityManager, now: Date): Promise<void> {
    await refreshMissing(tx, now, holdsUnreservableHost);
    await refreshDegraded(tx, now);
  }

  /** Active reservations whose pool differs from their hosts, as each type finds them. */
  private async outOfLine(): Promise<string[]> {
    const ids: string[] = [];
    for (const plugin of this.plugins.all()) {
      ids.push(...((await plugin.outOfLine?.(this.dataSource.manager)) ?? []));
    }
    return ids;
  }

  /** Active reservations whose hosts changed get their pool brought in line. */
  async resync(reservationIds: string[]): Promise<void> {
    for (const id of new Set(reservationIds)) {
      const reservation = await this.dataSource.manager.findOneBy(Reservation, { id });
      // An ended reservation has nothing to bring in line (and must not get it back).
      if (reservation === null || reservation.status !== 'active') continue;
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
