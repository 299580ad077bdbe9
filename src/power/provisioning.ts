import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { isResourceBusy } from '../common/errors.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withTransaction } from '../database/transaction.js';
import { errorMessage, within } from '../observability/bounded.js';
import { PoolSync } from '../plugins/physical-host/pool-sync.js';
import {
  reservationsToPrepare,
  type ToPrepare,
} from '../plugins/physical-host/reservations-to-prepare.js';
import { namedHosts } from '../pools/hosts.repository.js';
import { FREEPOOL } from '../pools/pool-names.js';
import { PoolsRepository } from '../pools/pools.repository.js';
import { lockStalePreparedPool, stalePreparedPools } from '../pools/pools.repository-power.js';
import { POWER_CALL_TIMEOUT_MS } from './power-transitions.js';
import { hostPowerJoin, isOnSql } from './power.repository.js';

/**
 * Metadata of a reservation's pool that is prepared but not started: it lets nobody in
 * (no `blazar:owner`, no project key), so neither Climate's filter nor Blazar's passes a
 * request for it; the start replaces the metadata and access opens.
 */
export const PREPARED_KEY = 'climate:prepared';

/** Reservations prepared per run at most. */
const BATCH = 50;

/**
 * The provisioning lead time (PROVISIONING_LEAD_MINUTES): a host reservation's hosts are
 * prepared that long before the lease starts: checked on (the power plan powers them on
 * in time) and moved out of the freepool into the reservation's pool, closed. At the
 * start only access opens. A prepared pool whose lease moved later or went away is
 * undone (its hosts back to the freepool). Both are idempotent and read the database
 * afresh each run; the start does everything itself when nothing was prepared.
 */
@Injectable()
export class Provisioning {
  private readonly logger = new Logger('power');

  constructor(
    private readonly dataSource: DataSource,
    private readonly poolSync: PoolSync,
    private readonly pools: PoolsRepository,
    private readonly clock: Clock,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  private get lead(): string {
    return `${this.config.provisioningLeadMinutes} minutes`;
  }

  async run(): Promise<void> {
    await this.undoStale();
    if (this.config.provisioningLeadMinutes > 0) await this.prepareDue();
  }

  /** Host reservations of pending leases within the lead time of their start, not all in their pool. */
  private due(now: Date): Promise<ToPrepare[]> {
    return reservationsToPrepare(this.dataSource.manager, now, this.lead, BATCH, {
      join: hostPowerJoin,
      on: isOnSql,
    });
  }

  private async prepareDue(): Promise<void> {
    for (const r of await this.due(this.clock.now())) {
      // Not all on yet: the power plan is bringing them up (they are needed now).
      if (!r.all_on) continue;
      try {
        if (!(await this.checked(r.hosts))) continue;
        await this.poolSync.syncReservationPool(r.id, { [PREPARED_KEY]: 'true' }, [
          r.project_id,
          ...r.extra,
        ]);
        this.logger.log({ msg: 'reservation prepared', reservation_id: r.id, hosts: r.hosts });
      } catch (error) {
        // A host the previous lease still holds: the next run tries again.
        const log = { msg: 'prepare waits', reservation_id: r.id, reason: errorMessage(error) };
        if (isResourceBusy(error)) this.logger.debug(log);
        else this.logger.warn(log);
      }
    }
  }

  /** The compute service says every host is on (Climate's record already does). */
  private async checked(hosts: string[]): Promise<boolean> {
    for (const host of hosts) {
      const state = await within(this.driver.powerState(host), POWER_CALL_TIMEOUT_MS, host);
      if (state !== 'on') {
        this.logger.warn({ msg: 'host not on by the compute service; prepare waits', host, state });
        return false;
      }
    }
    return true;
  }

  /**
   * Prepared pools whose reservation is no longer due (its lease moved later, or was
   * deleted) give their hosts back to the freepool. Nothing ran on them, so no server
   * is touched.
   */
  private async undoStale(): Promise<void> {
    const stale = await stalePreparedPools(
      this.dataSource.manager,
      PREPARED_KEY,
      this.clock.now(),
      this.lead,
    );
    for (const name of stale) {
      try {
        await this.undo(name);
      } catch (error) {
        this.logger.warn({
          msg: 'undoing a prepare failed',
          pool: name,
          error: errorMessage(error),
        });
      }
    }
  }

  private async undo(pool: string): Promise<void> {
    const hosts = await withTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      // Locked and checked again: a start that opened it (metadata replaced) keeps it.
      if (!(await lockStalePreparedPool(tx, pool, PREPARED_KEY, now, this.lead))) return null;
      const ids = await this.pools.hostsIn(tx, pool);
      const named = await namedHosts(tx, ids);
      await this.pools.moveHosts(tx, ids, FREEPOOL, now);
      await this.pools.deleteAggregate(tx, pool);
      return named.map((h) => h.name);
    });
    if (hosts === null) return;
    for (const host of hosts) {
      await this.driver.removeHost(pool, host);
      await this.driver.addHost(FREEPOOL, host);
    }
    await this.driver.deletePool(pool);
    this.logger.log({ msg: 'prepare undone', pool, hosts });
  }
}
