import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../../common/clock.js';
import { ResourceBusy } from '../../common/errors.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../../compute/compute-driver.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { sql } from '../../database/sql.js';
import { hostsAs, namedHosts } from '../../pools/hosts.repository.js';
import { memberIdsNamedSql, poolNameOfSql } from '../../pools/pools.repository.js';
import { withTransaction } from '../../database/transaction.js';
import { withFramedTransaction } from '../../database/framed-transaction.js';
import { FREEPOOL, recycleZone, reservationZone } from '../../pools/pool-names.js';
import { PoolsRepository } from '../../pools/pools.repository.js';

interface NamedHost {
  id: number;
  name: string;
}

interface Member extends NamedHost {
  pool: string | null;
  allocated: boolean;
}

/**
 * Pool changes of the lease lifecycle. Each writes Climate's record in one transaction,
 * then makes the compute driver match it; both halves are idempotent, so an action that
 * died half-way is simply run again.
 */
@Injectable()
export class PoolSync {
  private readonly logger = new Logger('pools');

  constructor(
    private readonly dataSource: DataSource,
    private readonly pools: PoolsRepository,
    private readonly clock: Clock,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * The reservation's pool holds exactly its allocated hosts. A host joins only from the
   * freepool; one still in another pool (the previous lease has not ended yet) fails the
   * attempt, and the manager retries it. `projects` (default: those the metadata lets
   * in) may keep their servers on joining hosts; the power plan's prepare step names
   * them while the metadata lets nobody in yet.
   */
  async syncReservationPool(
    reservationId: string,
    metadata: Record<string, string>,
    projects?: string[],
  ): Promise<void> {
    const zone = reservationZone(reservationId, this.config.azPrefix);
    const tenants = new Set(
      projects ?? [metadata['blazar:owner'], ...(metadata.filter_tenant_id ?? '').split(',')],
    );
    // Three round trips: BEGIN goes with the pool's row, COMMIT with the move.
    const { joined, left } = await withFramedTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      // Made or updated first: its row lock serialises the syncs of one reservation.
      await this.pools.ensure(tx, reservationId, 'reservation', now, {
        availabilityZone: zone,
        metadata,
      });
      const hosts = await this.members(tx, reservationId);
      const wanted = hosts.filter((h) => h.allocated);
      const left = hosts.filter((h) => !h.allocated);
      const joining = wanted.filter((h) => h.pool !== reservationId);
      const busy = joining.find((h) => h.pool !== null && h.pool !== FREEPOOL);
      if (busy !== undefined) {
        throw new ResourceBusy(`host ${busy.name} is still in pool ${busy.pool}`);
      }
      const moves = new Map([
        ...left.map((h) => [h.id, FREEPOOL] as const),
        ...joining.map((h) => [h.id, reservationId] as const),
      ]);
      await this.pools.move(tx, moves, now, { commit: true });
      return { joined: wanted, left };
    });
    await this.driver.ensurePool({ name: reservationId, availabilityZone: zone, metadata });
    for (const host of left) {
      await this.driver.removeHost(reservationId, host.name);
      await this.driver.addHost(FREEPOOL, host.name);
    }
    for (const host of joined) {
      await this.driver.removeHost(FREEPOOL, host.name);
      await this.clearForTenants(host.name, tenants);
      await this.driver.addHost(reservationId, host.name);
    }
  }

  /**
   * The reservation's aggregate in the compute service, made with the lease as Blazar
   * makes it (named by the reservation id, its zone, the metadata); hosts join at the
   * start (or when prepared). Climate's own record of the pool is made then too.
   */
  async createComputePool(reservationId: string, metadata: Record<string, string>): Promise<void> {
    await this.driver.ensurePool({
      name: reservationId,
      availabilityZone: reservationZone(reservationId, this.config.azPrefix),
      metadata,
    });
  }

  /**
   * Deletes the aggregate `createComputePool` made for a reservation that never started.
   * One the provisioning lead time prepared (hosts in it) is left to its undo, which
   * moves the hosts back first.
   */
  async discardComputePool(reservationId: string): Promise<void> {
    if (!(await this.pools.exists(this.dataSource.manager, reservationId))) {
      await this.driver.deletePool(reservationId);
    }
  }

  /**
   * Snapshots every server on the reservation's hosts (before-end action), each once: a
   * retried action skips the servers `done` names, and `record` is told of each
   * snapshot as soon as it is asked for.
   */
  async snapshotServers(
    reservationId: string,
    done: string[],
    record: (serverId: string) => Promise<void>,
  ): Promise<void> {
    const hosts = await this.named(
      this.dataSource.manager,
      await this.pools.hostsIn(this.dataSource.manager, reservationId),
    );
    for (const host of hosts) {
      for (const server of await this.driver.serversOnHost(host.name)) {
        if (done.includes(server.id)) continue;
        await this.driver.snapshotServer(server.id, `reserved_${server.name}`);
        await record(server.id);
      }
    }
  }

  /**
   * End of a host reservation: servers removed (kept for `recycle`), hosts moved to the
   * freepool, the recycle pool or the shared pool, and the reservation's pool deleted.
   */
  async endReservationPool(
    reservationId: string,
    onEnd: 'release' | 'recycle' | 'shared',
  ): Promise<void> {
    const em = this.dataSource.manager;
    const hosts = await this.members(em, reservationId);
    if (onEnd !== 'recycle') {
      for (const host of hosts) await this.removeServers(host.name);
    }
    // One statement: hosts moved on, the pool deleted.
    const targets = await this.pools.dissolve(
      em,
      reservationId,
      onEnd === 'release' ? FREEPOOL : onEnd,
      this.clock.now(),
    );
    if ([...targets.values()].includes('recycle')) {
      await this.driver.ensurePool({
        name: 'recycle',
        availabilityZone: recycleZone(this.config.azPrefix),
        metadata: {},
      });
    }
    for (const host of hosts) {
      await this.driver.removeHost(reservationId, host.name);
      const target = targets.get(host.id);
      if (target !== undefined) await this.driver.addHost(target, host.name);
    }
    await this.driver.deletePool(reservationId);
  }

  /**
   * Hosts in the recycle pool go back to the freepool once their servers are gone, or
   * when the grace period has passed (what is left is then removed).
   */
  async sweepRecycle(): Promise<number> {
    const em = this.dataSource.manager;
    const rows = await this.pools.recycled(em);
    let released = 0;
    const graceMs = this.config.recycleGraceMinutes * 60_000;
    for (const host of rows) {
      const servers = await this.driver.serversOnHost(host.name);
      const expired = this.clock.now().getTime() - host.since.getTime() >= graceMs;
      if (servers.length > 0 && !expired) continue;
      await this.removeServers(host.name);
      await withTransaction(this.dataSource, async (tx) => {
        const still = await this.pools.hostsIn(tx, 'recycle', [host.id]);
        if (still.length > 0) await this.pools.moveHosts(tx, still, FREEPOOL, this.clock.now());
      });
      await this.driver.removeHost('recycle', host.name);
      await this.driver.addHost(FREEPOOL, host.name);
      released++;
    }
    return released;
  }

  /**
   * Preemptible servers of other projects on a freshly reserved host go; any other
   * server of another project is never removed: the start waits (and is retried) until
   * its owner has moved it.
   */
  private async clearForTenants(host: string, tenants: Set<string>): Promise<void> {
    const others = (await this.driver.serversOnHost(host)).filter((s) => !tenants.has(s.projectId));
    await Promise.all(
      others.filter((s) => s.preemptible).map((s) => this.driver.deleteServer(s.id)),
    );
    const kept = others.filter((s) => !s.preemptible);
    if (kept.length > 0) {
      throw new ResourceBusy(
        `host ${host} still runs servers of other projects (${kept.map((s) => s.id).join(', ')})`,
      );
    }
  }

  private async removeServers(host: string): Promise<void> {
    const servers = await this.driver.serversOnHost(host);
    await Promise.all(servers.map((s) => this.driver.deleteServer(s.id)));
  }

  /**
   * The hosts allocated to the reservation or in its pool, in id order, with the pool each
   * is in now (null: none).
   */
  private async members(em: EntityManager, reservationId: string): Promise<Member[]> {
    const { rows } = await sql<Member>(
      em,
      `SELECT h.id, h.hypervisor_hostname AS name, ${poolNameOfSql('h')} AS pool,
              EXISTS (SELECT 1 FROM host_allocations a
                       WHERE a.reservation_id = $1 AND a.host_id = h.id) AS allocated
         FROM ${hostsAs('h')}
        WHERE h.id IN (SELECT host_id FROM host_allocations WHERE reservation_id = $1
                       UNION ${memberIdsNamedSql('$2')})
        ORDER BY h.id`,
      [reservationId, reservationId],
      { prepare: true },
    );
    return rows;
  }

  private async named(em: EntityManager, ids: number[]): Promise<NamedHost[]> {
    if (ids.length === 0) return [];
    return namedHosts(em, ids);
  }
}
