import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../../common/clock.js';
import {
  COMPUTE_DRIVER,
  type ComputeDriver,
  type FlavorSpec,
} from '../../compute/compute-driver.js';
import { sql } from '../../database/sql.js';
import { withFramedTransaction } from '../../database/framed-transaction.js';
import { reservationClass } from '../../compute/placement.client.js';
import { hostJoin } from '../../pools/hosts.repository.js';
import { memberNamesSql, membersOfSql, PoolsRepository } from '../../pools/pools.repository.js';

export interface SlotReservation {
  id: string;
  projectId: string;
  /** Acts in the tenant's project (Keystone trust), when the lease has one. */
  trustId: string | null;
  vcpus: number;
  memoryMb: number;
  diskGb: number;
  affinity: boolean | null;
  serverGroupId: string | null;
  /** More of the flavor, copied from the flavor a flavor:instance reservation names. */
  flavor?: { ephemeralGb: number; swapMb: number; extraSpecs: Record<string, string> };
  /** Groups made for an affinity the reservation no longer has: deleted at its start. */
  retiredServerGroupIds: string[];
}

/**
 * The objects an instance reservation has while it runs, as Blazar makes them: a private
 * flavor (id = reservation id) that sends its servers to the reservation's aggregate, the
 * aggregate (hosts stay in the freepool too), a server group when affinity is set, and
 * flavor access for the project. Every step is idempotent.
 */
@Injectable()
export class InstancePool {
  constructor(
    private readonly dataSource: DataSource,
    private readonly pools: PoolsRepository,
    private readonly clock: Clock,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
  ) {}

  /**
   * What Blazar makes when the lease is created: the server group (with affinity), the
   * private flavor and the aggregate, still without hosts. Idempotent; `discard` undoes it.
   */
  async materialize(
    r: SlotReservation,
  ): Promise<{ serverGroupId: string | null; aggregateId: number | null }> {
    const serverGroupId = await this.group(r);
    try {
      const [, aggregateId] = await Promise.all([
        this.driver.ensureFlavor(this.flavor(r, serverGroupId)),
        this.driver.ensurePool({
          name: r.id,
          availabilityZone: null,
          metadata: this.metadata(r, serverGroupId),
        }),
      ]);
      return { serverGroupId, aggregateId };
    } catch (error) {
      // The group is known only here: the create's undo would not find it.
      if (serverGroupId !== null) {
        await this.driver.deleteServerGroup(serverGroupId).catch(() => undefined);
      }
      throw error;
    }
  }

  /** Removes what `materialize` made, for a reservation that never started. */
  async discard(r: SlotReservation): Promise<void> {
    await this.driver.deleteFlavor(r.id);
    for (const id of [r.serverGroupId, ...r.retiredServerGroupIds]) {
      if (id !== null) await this.driver.deleteServerGroup(id);
    }
    await this.driver.deletePool(r.id);
  }

  /** The group the reservation's affinity asks for: the one it has, or a new one. */
  private async group(r: SlotReservation): Promise<string | null> {
    if (r.affinity === null) return null;
    return (
      r.serverGroupId ??
      (await this.driver.ensureServerGroup(
        `reservation:${r.id}`,
        r.affinity ? 'affinity' : 'anti-affinity',
        { projectId: r.projectId, trustId: r.trustId },
      ))
    );
  }

  private metadata(r: SlotReservation, serverGroupId: string | null): Record<string, string> {
    return {
      reservation: r.id,
      filter_tenant_id: r.projectId,
      'blazar:owner': r.projectId,
      ...(serverGroupId === null ? {} : { affinity_id: serverGroupId }),
    };
  }

  private flavor(r: SlotReservation, serverGroupId: string | null): FlavorSpec {
    return {
      id: r.id,
      name: `reservation:${r.id}`,
      vcpus: r.vcpus,
      ramMb: r.memoryMb,
      diskGb: r.diskGb,
      ephemeralGb: r.flavor?.ephemeralGb,
      swapMb: r.flavor?.swapMb,
      extraSpecs: {
        ...r.flavor?.extraSpecs,
        'aggregate_instance_extra_specs:reservation': r.id,
        // One unit of the reservation's own class: Placement holds exactly its slots.
        [`resources:${reservationClass(r.id)}`]: '1',
        ...(serverGroupId === null ? {} : { affinity_id: serverGroupId }),
      },
    };
  }

  async start(r: SlotReservation): Promise<{ serverGroupId: string | null; aggregateId: number }> {
    // Groups its affinity had before an update (made at the create) are not its own now.
    for (const id of r.retiredServerGroupIds) await this.driver.deleteServerGroup(id);
    const serverGroupId = await this.group(r);
    const metadata = this.metadata(r, serverGroupId);
    await this.driver.ensureFlavor(this.flavor(r, serverGroupId));
    // Two round trips: BEGIN goes with the aggregate's row, COMMIT with the read.
    const { aggregateId, hosts, stale } = await withFramedTransaction(
      this.dataSource,
      async (tx) => {
        const aggregateId = await this.pools.ensure(tx, r.id, 'instance', this.clock.now(), {
          metadata,
        });
        // The hosts of its slots, and (slots null) those in its aggregate without slots.
        const { rows } = await sql<{ id: number; name: string; slots: number | null }>(
          tx,
          `SELECT h.id, h.hypervisor_hostname AS name, a.slots
             FROM instance_allocations a ${hostJoin('h', 'a.host_id')}
            WHERE a.reservation_id = $1
           UNION ALL
           SELECT h.id, h.hypervisor_hostname, NULL FROM (${membersOfSql('$2')}) ah ${hostJoin('h', 'ah.host_id')}
            WHERE NOT EXISTS (
                    SELECT 1 FROM instance_allocations a WHERE a.reservation_id = $1 AND a.host_id = h.id)
            ORDER BY 1`,
          [r.id, aggregateId],
          { prepare: true, commit: true },
        );
        return {
          aggregateId,
          hosts: rows.flatMap((h) => (h.slots === null ? [] : [{ ...h, slots: h.slots }])),
          stale: rows.filter((h) => h.slots === null),
        };
      },
    );
    // Climate's record of the aggregate changes only after the compute service's did:
    // where they differ, the next heal knows to bring the compute service in line.
    const computeId = await this.driver.ensurePool({
      name: r.id,
      availabilityZone: null,
      metadata,
    });
    await this.driver.sizeReservation(
      r.id,
      new Map([
        ...stale.map((h) => [h.name, 0] as const),
        ...hosts.map((h) => [h.name, h.slots] as const),
      ]),
    );
    for (const host of stale) await this.driver.removeHost(r.id, host.name);
    for (const host of hosts) await this.driver.addHost(r.id, host.name);
    await this.pools.setInstanceMembers(
      this.dataSource.manager,
      { aggregateId, reservationId: r.id },
      { gone: stale.map((h) => h.id), added: hosts.map((h) => h.id) },
      this.clock.now(),
      (reservation, ah) => `SELECT 1 FROM instance_allocations a
                             WHERE a.reservation_id = ${reservation} AND a.host_id = ${ah}.host_id`,
    );
    await this.driver.grantFlavorAccess(r.id, r.projectId);
    // Blazar shows the compute service's aggregate id where there is one.
    return { serverGroupId, aggregateId: computeId ?? aggregateId };
  }

  /** Servers built with the flavor go first, then the flavor, the group and the pool. */
  async end(r: SlotReservation): Promise<void> {
    const servers = await this.driver.serversWithFlavor(r.id);
    await Promise.all(servers.map((s) => this.driver.deleteServer(s.id)));
    await this.driver.revokeFlavorAccess(r.id, r.projectId);
    await this.driver.deleteFlavor(r.id);
    if (r.serverGroupId !== null) await this.driver.deleteServerGroup(r.serverGroupId);
    const { rows } = await sql<{ name: string }>(
      this.dataSource.manager,
      `${memberNamesSql('$1', 'instance')}
       UNION SELECT h.hypervisor_hostname FROM instance_allocations ia ${hostJoin('h', 'ia.host_id')}
        WHERE ia.reservation_id = $2`,
      [r.id, r.id],
    );
    await this.driver.unsizeReservation(
      r.id,
      rows.map((h) => h.name),
    );
    await this.pools.deleteAggregate(this.dataSource.manager, r.id);
    await this.driver.deletePool(r.id);
  }
}
