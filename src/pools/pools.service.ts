import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { Conflict } from '../common/errors.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { claimedOn } from './host-usage.js';
import { lockHost } from './hosts.repository.js';
import { withTransaction } from '../database/transaction.js';
import { EvacuationPort } from './evacuation.js';
import { FREEPOOL, type MovablePool } from './pool-names.js';
import { PoolsRepository } from './pools.repository.js';
import type { PoolResponse } from './dto/pool.dto.js';

/** Admin moves between the reservation pool (freepool) and the shared pool. */
@Injectable()
export class PoolsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly pools: PoolsRepository,
    private readonly evacuation: EvacuationPort,
    private readonly clock: Clock,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
  ) {}

  async list(): Promise<PoolResponse[]> {
    const rows = await this.pools.list(this.dataSource.manager);
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      kind: r.kind,
      availability_zone: r.availability_zone,
      metadata: r.metadata,
      hosts: r.hosts,
    }));
  }

  /**
   * Moves a host to the shared pool or back. Leaving the reservation pool moves the
   * host's current and future allocations to other hosts, all or nothing (409).
   */
  async move(hostId: number, target: MovablePool): Promise<void> {
    const result = await withTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      const host = await lockHost(tx, hostId);
      const from = (await this.pools.poolOf(tx, host.id))?.name ?? null;
      if (from === target) return { host, from, moved: [] };
      if (target === FREEPOOL && from !== 'shared' && from !== 'recycle') {
        throw new Conflict(
          `Host ${host.id} is in pool ${from}; only shared or recycled hosts can join the freepool`,
        );
      }
      if (target === 'shared') await this.assertNoClaims(tx, host.id);
      const moved = target === 'shared' ? await this.evacuation.evacuate(tx, [host.id], now) : [];
      const stuck = moved.filter((m) => m.to === null).map((m) => m.reservationId);
      if (stuck.length > 0) {
        throw new Conflict(
          `Host ${host.id} cannot leave the reservation pool: no other host can take reservations [${stuck.join(', ')}]`,
          'HostInUse',
        );
      }
      await this.pools.moveHosts(tx, [host.id], target, now);
      return { host, from, moved };
    });
    if (result.from !== null && result.from !== target) {
      await this.driver.removeHost(result.from, result.host.name);
    }
    await this.driver.addHost(target, result.host.name);
    await this.evacuation.resync(
      result.moved.filter((m) => m.status === 'active').map((m) => m.reservationId),
    );
  }

  /** Servers claimed into instance slots run on the host: their slots cannot move. */
  private async assertNoClaims(tx: EntityManager, hostId: number): Promise<void> {
    const claimed = await claimedOn(tx, hostId);
    if (claimed.length > 0) {
      throw new Conflict(
        `Host ${hostId} runs servers claimed by reservations [${claimed.join(', ')}]; it can join the shared pool once they are gone`,
        'HostInUse',
      );
    }
  }
}
