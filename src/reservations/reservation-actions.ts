import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { TrustsService } from '../compute/trusts.service.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withFramedTransaction } from '../database/framed-transaction.js';
import { UsageEnforcement } from '../enforcement/usage-enforcement.service.js';
import { sql, SqlParams } from '../database/sql.js';
import { activateReservationsSql, RESERVATION_DELETED_SQL } from '../model/lease-tables-status.js';
import type { Lease } from '../model/lease.entity.js';
import { callPlugin, PluginRegistry } from '../plugins/plugin-registry.js';
import type { ResourcePlugin } from '../plugins/resource-plugin.js';
import { PowerReadiness } from '../pools/power-readiness.js';
import { Reservation } from '../model/reservation.entity.js';

/**
 * The lifecycle actions of a lease's reservations, through their plugins. Each step
 * records its result right away, so a repeat after a crash skips what is done; the
 * plugin actions themselves are idempotent too.
 */
@Injectable()
export class ReservationActions {
  constructor(
    private readonly dataSource: DataSource,
    private readonly plugins: PluginRegistry,
    private readonly trusts: TrustsService,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly enforcement: UsageEnforcement,
    private readonly readiness: PowerReadiness,
  ) {}

  /** One plugin action, with the plugin's time limit and its name on errors. */
  private act(
    r: Reservation,
    action: string,
    fn: (plugin: ResourcePlugin) => Promise<void>,
  ): Promise<void> {
    const plugin = this.plugins.get(r.resourceType);
    return callPlugin(plugin, action, () => fn(plugin), this.config.pluginTimeoutMs);
  }

  /**
   * Starts the pending reservations. Returns those it started, for the caller to record
   * active with the event's completion (activateSql), one commit fewer; when one fails,
   * those started before it are recorded here first. A crash before the record repeats
   * their on_start, which is idempotent.
   */
  async start(lease: Lease, reservations: Reservation[]): Promise<string[]> {
    const started: string[] = [];
    try {
      for (const r of reservations.filter((r) => r.status === 'pending')) {
        // Never on a host that is off or still booting: the start waits for it.
        await this.readiness.assertOn(this.dataSource.manager, r.id);
        await this.act(r, 'on_start', (plugin) => plugin.onStart(r, lease));
        started.push(r.id);
      }
    } catch (error) {
      if (started.length > 0) {
        const p = new SqlParams();
        await sql(this.dataSource.manager, this.activateSql(p, started), p.values);
      }
      throw error;
    }
    return started;
  }

  /**
   * Records started reservations active: a statement (or CTE body) whose values `p` binds.
   * Only from pending: a start that stalled past its claim must not revive a reservation
   * that another manager has ended meanwhile.
   */
  activateSql(p: SqlParams, ids: string[]): string {
    return activateReservationsSql(p, ids, this.clock.now());
  }

  /**
   * After an update, started reservations get their resources in line with their
   * allocations (on_start is idempotent). A failure here leaves the update in place;
   * the next refresh, heal or retry brings the pool in line.
   */
  async refresh(lease: Lease, reservations: Reservation[]): Promise<void> {
    for (const r of reservations.filter((r) => r.status === 'active')) {
      await this.act(r, 'on_start', (plugin) => plugin.onStart(r, lease));
    }
  }

  async beforeEnd(lease: Lease, reservations: Reservation[]): Promise<void> {
    for (const r of reservations.filter((r) => r.status === 'active')) {
      await this.act(r, 'before_end', (plugin) => plugin.beforeEnd(r, lease));
    }
  }

  /**
   * Takes back what started reservations hold, then frees every allocation; the
   * lease's trust goes last. The external service hears of the end afterwards (with the
   * allocations as they were), unless the lease had already ended.
   */
  async end(lease: Lease, reservations: Reservation[]): Promise<void> {
    const ended = reservations.length > 0 && reservations.every((r) => r.status === 'deleted');
    const snapshot = ended
      ? null
      : await this.enforcement.endSnapshot(this.dataSource.manager, lease, reservations);
    for (const r of reservations.filter((r) => r.status !== 'deleted')) {
      const plugin = this.plugins.get(r.resourceType);
      if (r.status === 'active' || r.status === 'error') {
        await this.act(r, 'on_end', (p) => p.onEnd(r, lease));
      } else if (r.status === 'pending' && plugin.discard !== undefined) {
        // Never started: only what its create made in the compute service goes.
        await this.act(r, 'discard', (p) => p.discard!(r, lease));
      }
      await withFramedTransaction(this.dataSource, async (tx) => {
        // Healing locks the reservation while it moves slots: the update takes that lock
        // first (BEGIN goes with it), so release sees what healing wrote.
        await sql(tx, RESERVATION_DELETED_SQL, [r.id, this.clock.now()], { prepare: true });
        await plugin.release(tx, r);
      });
    }
    await this.trusts.release(lease.id, lease.trustId);
    await this.enforcement.onEnd(snapshot);
  }
}
