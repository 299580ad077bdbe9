import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { InvalidInput } from '../../common/errors.js';
import type { JsonObject } from '../../common/json.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { sql } from '../../database/sql.js';
import { hostJoin } from '../../pools/hosts.repository.js';
import { mergeParams } from '../../model/lease-tables.js';
import type { Lease } from '../../model/lease.entity.js';
import { Reservation } from '../../model/reservation.entity.js';
import { combine, HostQueryBuilder } from '../../requirements/host-query.js';
import { InstancePool, SlotReservation } from './instance-pool.js';
import { SlotsRepository } from './slots.repository.js';
import { occupied, type Span } from '../../pools/host-usage.js';
import { NotEnoughHosts } from '../physical-host/physical-host.plugin.js';
import type {
  PreparedReservation,
  ReserveContext,
  ResourcePlugin,
  Window,
} from '../resource-plugin.js';
import type { HostQuery } from '../../requirements/host-query.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../../compute/compute-driver.js';
import { asInstanceParams, InstanceParams, validateInstanceParams } from './instance-params.js';
import { InstanceUpkeep } from './instance-upkeep.js';
import { SlotMover } from './slot-mover.js';
import { scheduleSlots } from './slot-scheduling.js';
import { Clock } from '../../common/clock.js';
import type { FilterAnswer, SchedulingRequest } from '../scheduling.js';
import type { MovedAllocation } from '../../pools/evacuation.js';
import { pickSlots, Placement } from './pick-slots.js';
import type {
  InstanceReservationDetails,
  InstanceReservationFields,
} from './dto/instance-reservation.response.js';

/**
 * `virtual:instance`: slots of vcpus/memory_mb/disk_gb on hosts of the reservation pool,
 * exact over time (every instant of the window fits each host's inventory times the
 * allocation ratios), packed onto hosts that already carry slots.
 */
@Injectable()
export class VirtualInstancePlugin implements ResourcePlugin {
  readonly resourceType = 'virtual:instance';
  /** Its server group belongs to the tenant, or the tenant could not boot into it. */
  readonly actsAsUser = true;

  constructor(
    private readonly dataSource: DataSource,
    private readonly slots: SlotsRepository,
    private readonly queries: HostQueryBuilder,
    private readonly pool: InstancePool,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    @Inject(CONFIG) private readonly config: Config,
    private readonly upkeeper: InstanceUpkeep,
    private readonly mover: SlotMover,
    private readonly clock: Clock,
  ) {}

  outOfLine(em: EntityManager): Promise<string[]> {
    return this.slots.outOfLine(em);
  }

  evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]> {
    return this.mover.evacuate(tx, hostIds, now);
  }

  schedule(em: EntityManager, request: SchedulingRequest): Promise<FilterAnswer | null> {
    return scheduleSlots(em, request, this.clock.now());
  }

  upkeep(): Promise<void> {
    return this.upkeeper.run();
  }

  /**
   * With `resource_id`, the reservation is for an existing server that Nova keeps
   * shelved until the lease starts (the Climate flow): one slot of its flavor's size.
   */
  async validate(values: Record<string, unknown>, context: ReserveContext): Promise<JsonObject> {
    const serverId = values.resource_id;
    if (typeof serverId !== 'string' || serverId === '')
      return { ...validateInstanceParams(values) };
    const server = await this.driver.getServer(serverId);
    if (server === null || server.projectId !== context.projectId) {
      throw new InvalidInput(`Server ${serverId} not found`, 'ServerNotFound');
    }
    // BUILD: a server booted with `reserved=True`, asking for its lease while scheduled.
    if (!server.status.startsWith('SHELVED') && server.status !== 'BUILD') {
      throw new InvalidInput(
        `Server ${serverId} is ${server.status}; only a shelved server can be reserved`,
      );
    }
    return {
      ...validateInstanceParams(values, {
        vcpus: server.vcpus,
        memory_mb: server.memoryMb,
        disk_gb: server.diskGb,
      }),
    };
  }

  /** Before start every parameter may change; while active only `amount`, and only up. */
  validateUpdate(reservation: Reservation, changes: Record<string, unknown>): JsonObject {
    const current = asInstanceParams(reservation.params);
    if (reservation.status === 'active') {
      const other = Object.keys(changes).filter((k) => k !== 'amount');
      if (other.length > 0) {
        throw new InvalidInput(
          `Only amount can change while the reservation is active (not ${other.join(', ')})`,
          'CantUpdateParameter',
        );
      }
    } else if (reservation.status !== 'pending') {
      throw new InvalidInput(
        `A ${reservation.status} reservation cannot be updated`,
        'CantUpdateParameter',
      );
    }
    const { resource_properties, vcpus, memory_mb, disk_gb, amount, affinity } = current;
    const next = validateInstanceParams({
      resource_properties,
      vcpus,
      memory_mb,
      disk_gb,
      amount,
      affinity,
      ...changes,
    });
    if (reservation.status === 'active' && next.amount < current.amount) {
      throw new InvalidInput(
        'The amount of an active reservation can only grow',
        'CantUpdateParameter',
      );
    }
    // A group made with the lease for another affinity is no longer this reservation's:
    // the start deletes it and makes the one the new affinity asks for.
    const regroup = next.affinity !== current.affinity && current.server_group_id !== null;
    return {
      ...next,
      server_id: current.server_id ?? null,
      server_group_id: regroup ? null : current.server_group_id,
      aggregate_id: current.aggregate_id,
      retired_server_group_ids: [
        ...(current.retired_server_group_ids ?? []),
        ...(regroup ? [current.server_group_id as string] : []),
      ],
    };
  }

  span(window: Window): Span {
    return occupied(window, this.config.cleaningTimeMinutes);
  }

  /**
   * Places and locks the slots in one statement; the create's statement checks the
   * hosts again after the locks (slots committed meanwhile) and writes them.
   */
  async prepare(
    tx: EntityManager,
    reservation: Reservation,
    window: Window,
  ): Promise<PreparedReservation> {
    const params = asInstanceParams(reservation.params);
    const q = await this.queries.build(tx, combine(params.resource_properties));
    return this.placeNew(tx, reservation.id, q, this.span(window), params, 0);
  }

  private async placeNew(
    tx: EntityManager,
    reservationId: string,
    q: HostQuery,
    during: Span,
    params: InstanceParams,
    round: number,
  ): Promise<PreparedReservation> {
    // As placeLocked: a host filling up under us five times running means no room.
    const placement =
      round < 5 ? await this.slots.placeNew(tx, q, during, params, reservationId) : null;
    if (placement === null) throw this.noRoom(params);
    return {
      hosts: 0,
      details: { claims: [] },
      write: (p, go) => [this.slots.addSql(p, reservationId, placement, params, during, go)],
      recheck: (p) => this.slots.recheckSql(p, q, during, params, reservationId, placement),
      again: (next) => this.placeNew(next, reservationId, q, during, params, round + 1),
    };
  }

  private noRoom(params: InstanceParams): NotEnoughHosts {
    return new NotEnoughHosts(
      `: no room for ${params.amount} instance(s) of ${params.vcpus} vCPU, ${params.memory_mb} MB`,
    );
  }

  async update(tx: EntityManager, reservation: Reservation, window: Window): Promise<void> {
    const current = await this.slots.placement(tx, reservation.id);
    const placement = await this.place(tx, reservation, window, current);
    if (reservation.status === 'active') {
      const lost = [...current].filter(([host, n]) => (placement.get(host) ?? 0) < n);
      if (lost.length > 0)
        throw new NotEnoughHosts(': an active reservation cannot give up slots it holds');
    }
  }

  /** Where the slots go: packed, affinity kept, the hosts it holds preferred. */
  private async place(
    tx: EntityManager,
    r: Reservation,
    window: Window,
    current: Placement,
  ): Promise<Placement> {
    const params = asInstanceParams(r.params);
    const q = await this.queries.build(tx, combine(params.resource_properties));
    const during = this.span(window);
    const placement = await this.slots.placeLocked(
      tx,
      q,
      during,
      params,
      {
        ownReservation: r.id,
        need: { amount: params.amount, oneHost: params.affinity === true },
        prefer: [...current.keys()],
      },
      (hosts) => pickSlots(hosts, params.amount, params.affinity, current),
    );
    if (placement === null) throw this.noRoom(params);
    await this.slots.store(tx, r.id, placement, params, during);
    return placement;
  }

  /**
   * Blazar's objects of a new reservation, made with the lease: its server group (with
   * affinity), private flavor and aggregate (empty until the start). Not for a reserved
   * existing server (the Climate flow), which never boots with the flavor.
   */
  async materialize(reservation: Reservation, lease: Lease): Promise<JsonObject> {
    const params = asInstanceParams(reservation.params);
    if (params.server_id) return {};
    const made = await this.pool.materialize(this.slotReservation(reservation, lease, params));
    return { server_group_id: made.serverGroupId, aggregate_id: made.aggregateId };
  }

  async discard(reservation: Reservation, lease: Lease): Promise<void> {
    const params = asInstanceParams(reservation.params);
    if (params.server_id) return;
    await this.pool.discard(this.slotReservation(reservation, lease, params));
  }

  async release(tx: EntityManager, reservation: Reservation): Promise<void> {
    await this.slots.release(tx, reservation.id);
    await sql(tx, `DELETE FROM claims WHERE reservation_id = $1`, [reservation.id], {
      prepare: true,
    });
  }

  async onStart(reservation: Reservation, lease: Lease): Promise<void> {
    const params = asInstanceParams(reservation.params);
    const made = await this.pool.start(this.slotReservation(reservation, lease, params));
    if (params.server_id) {
      // The reserved server wakes on the host its slot is on; one that still runs
      // elsewhere (its lease was made at boot for later) is shelved first.
      const [host] = await this.slots.hostNames(this.dataSource.manager, reservation.id);
      const server = await this.driver.getServer(params.server_id);
      if (server?.status === 'ACTIVE' && server.host !== host) {
        await this.driver.shelveServer(params.server_id);
      }
      if (host !== undefined) await this.driver.unshelveServer(params.server_id, host);
    }
    const owned = {
      server_group_id: made.serverGroupId,
      aggregate_id: made.aggregateId,
      retired_server_group_ids: [],
    };
    reservation.params = { ...reservation.params, ...owned };
    // Written straight away, so a retried start finds the group it made; only the keys
    // the start owns, merged into the row as it is now: `params` as read before the
    // compute service was called may be stale (an update of `amount` meanwhile).
    await mergeParams(this.dataSource.manager, reservation.id, JSON.stringify(owned));
  }

  async beforeEnd(): Promise<void> {}

  async onEnd(reservation: Reservation, lease: Lease): Promise<void> {
    const params = asInstanceParams(reservation.params);
    // A reserved existing server lives only as long as its lease.
    if (params.server_id) await this.driver.deleteServer(params.server_id);
    await this.pool.end(this.slotReservation(reservation, lease, params));
  }

  present(reservation: Reservation): InstanceReservationFields {
    const p = asInstanceParams(reservation.params);
    return {
      vcpus: p.vcpus,
      memory_mb: p.memory_mb,
      disk_gb: p.disk_gb,
      amount: p.amount,
      affinity: p.affinity,
      resource_properties: p.resource_properties,
      flavor_id: reservation.id,
      server_group_id: p.server_group_id ?? null,
      aggregate_id: p.aggregate_id ?? null,
      ...(p.server_id ? { server_id: p.server_id } : {}),
    };
  }

  /** The claims servers hold on the reservation's slots. */
  async describe(
    em: EntityManager,
    reservations: Reservation[],
  ): Promise<Map<string, InstanceReservationDetails>> {
    const ids = reservations.map((r) => r.id);
    const { rows } = await sql<{
      reservation_id: string;
      id: string;
      server_id: string;
      host: string;
    }>(
      em,
      `SELECT c.reservation_id, c.id, c.server_id, h.hypervisor_hostname AS host
         FROM claims c ${hostJoin('h', 'c.host_id')}
        WHERE c.reservation_id = ANY($1::uuid[]) ORDER BY c.created_at, c.id`,
      [ids],
    );
    const out = new Map<string, InstanceReservationDetails>(ids.map((id) => [id, { claims: [] }]));
    for (const { reservation_id, ...claim } of rows) out.get(reservation_id)?.claims.push(claim);
    return out;
  }

  private slotReservation(r: Reservation, lease: Lease, p: InstanceParams): SlotReservation {
    return {
      id: r.id,
      projectId: lease.projectId,
      trustId: lease.trustId,
      vcpus: p.vcpus,
      memoryMb: p.memory_mb,
      diskGb: p.disk_gb,
      affinity: p.affinity,
      serverGroupId: p.server_group_id ?? null,
      retiredServerGroupIds: p.retired_server_group_ids ?? [],
    };
  }
}
