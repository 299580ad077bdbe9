import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { SqlParams } from '../../database/sql.js';
import { addSnapshotted, snapshotted } from '../../model/lease-tables.js';
import { formatWireDate } from '../../common/dates.js';
import { Conflict, InvalidInput } from '../../common/errors.js';
import type { JsonObject } from '../../common/json.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import type { Lease } from '../../model/lease.entity.js';
import type { Reservation } from '../../model/reservation.entity.js';
import { occupied, slotHostsSql, Span } from '../../pools/host-usage.js';
import { AllocationsRepository } from './host-allocations.repository.js';
import { combine, HostQuery, HostQueryBuilder } from '../../requirements/host-query.js';
import { PoolSync } from './pool-sync.js';
import { PowerReadiness } from '../../pools/power-readiness.js';
import type { PreparedReservation, ResourcePlugin, Window } from '../resource-plugin.js';
import { asHostParams, HostParams, validateHostParams } from './host-params.js';
import { HostMover } from './host-mover.js';
import type { HostReservationFields } from './dto/host-reservation.response.js';
import type { MovedAllocation } from '../../pools/evacuation.js';

export class NotEnoughHosts extends Conflict {
  constructor(detail = '') {
    super(`Not enough hosts available${detail}`, 'NotEnoughHostsAvailable');
  }
}

/**
 * `physical:host`: whole hosts from the reservation pool, exclusive for the lease's
 * window widened by the cleaning time. Allocation is set-based SQL; the exclusion
 * constraint on host_allocations makes double booking impossible.
 */
@Injectable()
export class PhysicalHostPlugin implements ResourcePlugin {
  readonly resourceType = 'physical:host';
  private readonly logger = new Logger('physical:host');

  constructor(
    private readonly dataSource: DataSource,
    private readonly allocations: AllocationsRepository,
    private readonly queries: HostQueryBuilder,
    private readonly pools: PoolSync,
    @Inject(CONFIG) private readonly config: Config,
    private readonly mover: HostMover,
    private readonly readiness: PowerReadiness,
  ) {}

  evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]> {
    return this.mover.evacuate(tx, hostIds, now);
  }

  validate(values: Record<string, unknown>): JsonObject {
    return { ...validateHostParams(values, this.config.topologyLevels) };
  }

  validateUpdate(
    reservation: Reservation,
    changes: Record<string, unknown>,
    lease: Lease,
  ): JsonObject {
    const current = asHostParams(reservation.params);
    const fixed = ['before_end', 'on_end', 'affinity', 'anti_affinity'].filter((k) => k in changes);
    if (fixed.length > 0) {
      throw new InvalidInput(`${fixed.join(', ')} cannot be updated`, 'CantUpdateParameter');
    }
    if (reservation.status === 'active' && lease.status !== 'ACTIVE') {
      throw new InvalidInput('This reservation cannot be updated now', 'CantUpdateParameter');
    }
    return { ...validateHostParams({ ...current, ...changes }, this.config.topologyLevels) };
  }

  /** The allocation window: the lease's, with the cleaning time after its end. */
  span(window: Window): Span {
    return occupied(window, this.config.cleaningTimeMinutes);
  }

  async query(em: EntityManager, params: HostParams): Promise<HostQuery> {
    const requirement = combine(params.hypervisor_properties, params.resource_properties);
    return this.queries.build(em, requirement, {
      affinity: params.affinity,
      antiAffinity: params.anti_affinity,
    });
  }

  /**
   * Picks and locks the hosts in one statement, among those that can be powered on and
   * prepared by the start; the create's statement then checks them again after the
   * locks (slots or a power-off committed meanwhile) and writes the allocations.
   */
  async prepare(
    tx: EntityManager,
    reservation: Reservation,
    window: Window,
  ): Promise<PreparedReservation> {
    const params = asHostParams(reservation.params);
    const q = await this.query(tx, params);
    const choice = { q, ready: this.readiness.restrict(q, window.start), params, window };
    return this.choose(tx, reservation.id, choice, [], 0);
  }

  private async choose(
    tx: EntityManager,
    reservationId: string,
    c: { q: HostQuery; ready: HostQuery; params: HostParams; window: Window },
    exclude: number[],
    round: number,
  ): Promise<PreparedReservation> {
    const during = this.span(c.window);
    const hosts = await this.allocations.pick(tx, c.ready, during, c.params, { exclude });
    if (hosts.length < c.params.min) throw await this.noRoom(tx, c.q, c.params.min, c.window);
    return this.prepared(reservationId, hosts, during, {
      recheck: (p) => {
        const ids = `${p.bind(hosts)}::int[]`;
        const range = `tstzrange(${p.bind(during.start)}::timestamptz, ${p.bind(during.end)}::timestamptz, '[)')`;
        return `SELECT array_agg(DISTINCT x.host_id) FROM (
                  ${slotHostsSql(ids, range)}
                  UNION ALL ${this.readiness.notReadySql(p, ids, c.window.start)}) x`;
      },
      again: async (next, stale) => {
        const lost = stale as number[];
        if (round < 2) return this.choose(next, reservationId, c, [...exclude, ...lost], round + 1);
        // Still losing hosts after three picks: keep those that held (checked after the locks).
        const kept = hosts.filter((h) => !lost.includes(h));
        if (kept.length < c.params.min) throw await this.noRoom(next, c.q, c.params.min, c.window);
        return this.prepared(reservationId, kept, during, {});
      },
    });
  }

  private prepared(
    reservationId: string,
    hosts: number[],
    during: Span,
    check: Pick<PreparedReservation, 'recheck' | 'again'>,
  ): PreparedReservation {
    return {
      hosts: hosts.length,
      write: (p: SqlParams, go: string) => [
        `INSERT INTO host_allocations (id, reservation_id, host_id, during)
         SELECT uuid7(), ${p.bind(reservationId)}::uuid, h,
                tstzrange(${p.bind(during.start)}::timestamptz, ${p.bind(during.end)}::timestamptz, '[)')
           FROM unnest(${p.bind(hosts)}::int[]) h WHERE ${go}`,
      ],
      ...check,
    };
  }

  /**
   * Re-allocates for new parameters or dates, keeping the hosts that still fit. An
   * active reservation may gain hosts but never lose one it is using.
   */
  async update(tx: EntityManager, reservation: Reservation, window: Window): Promise<void> {
    const params = asHostParams(reservation.params);
    const q = await this.query(tx, params);
    const during = this.span(window);
    const current = await this.allocations.hostsOf(tx, reservation.id);
    const placed = params.affinity !== null || params.anti_affinity !== null;
    let kept = placed ? [] : await this.allocations.stillFitting(tx, reservation.id, q, during);
    kept = kept.slice(0, params.max);
    if (placed) await this.allocations.release(tx, reservation.id);
    else await this.allocations.reshape(tx, reservation.id, kept, during);
    const wanted = { min: Math.max(params.min - kept.length, 0), max: params.max - kept.length };
    const added =
      wanted.max > 0
        ? await this.readiness.pick(tx, q, window.start, (ready, exclude) =>
            this.allocations.findFree(tx, ready, during, wanted, {
              ownReservation: reservation.id,
              exclude: [...kept, ...exclude],
            }),
          )
        : [];
    if (kept.length + added.length < params.min) throw await this.noRoom(tx, q, params.min, window);
    await this.allocations.insert(tx, reservation.id, added, during);
    if (reservation.status === 'active') {
      const now = await this.allocations.hostsOf(tx, reservation.id);
      const lost = current.filter((h) => !now.includes(h));
      if (lost.length > 0) {
        throw new NotEnoughHosts(': an active reservation cannot give up hosts it is using');
      }
    }
  }

  async release(tx: EntityManager, reservation: Reservation): Promise<void> {
    await this.allocations.release(tx, reservation.id);
  }

  /** Who may use the pool: the owner and the extra projects (Blazar's metadata). */
  private metadata(reservation: Reservation, lease: Lease): Record<string, string> {
    const params = asHostParams(reservation.params);
    const metadata: Record<string, string> = {
      'blazar:owner': lease.projectId,
      filter_tenant_id: [lease.projectId, ...params.extra_projects].join(','),
    };
    for (const project of params.extra_projects) metadata[project] = 'true';
    return metadata;
  }

  /**
   * The reservation's aggregate exists once the lease is created, as in Blazar. With a
   * provisioning lead time its hosts join before the start, so it opens (gets its
   * owner) only at the start.
   */
  async materialize(reservation: Reservation, lease: Lease): Promise<JsonObject> {
    const open = this.config.provisioningLeadMinutes === 0;
    await this.pools.createComputePool(
      reservation.id,
      open ? this.metadata(reservation, lease) : {},
    );
    return {};
  }

  async discard(reservation: Reservation): Promise<void> {
    await this.pools.discardComputePool(reservation.id);
  }

  /** Creates the reservation's pool and moves its hosts in from the freepool. */
  async onStart(reservation: Reservation, lease: Lease): Promise<void> {
    await this.pools.syncReservationPool(reservation.id, this.metadata(reservation, lease));
  }

  async beforeEnd(reservation: Reservation): Promise<void> {
    const params = asHostParams(reservation.params);
    const action =
      params.before_end === 'default' ? this.config.beforeEndAction : params.before_end;
    if (action !== 'snapshot') return;
    // Which servers were snapshotted is kept on the row, so a retry does not repeat them.
    const em = this.dataSource.manager;
    const done = (await snapshotted(em, reservation.id)) ?? [];
    await this.pools.snapshotServers(reservation.id, done, (serverId) =>
      addSnapshotted(em, reservation.id, serverId),
    );
  }

  /** Removes the servers (unless recycled), moves the hosts on, deletes the pool. */
  async onEnd(reservation: Reservation): Promise<void> {
    const params = asHostParams(reservation.params);
    await this.pools.endReservationPool(reservation.id, params.on_end);
  }

  present(reservation: Reservation): HostReservationFields {
    const p = asHostParams(reservation.params);
    return {
      min: p.min,
      max: p.max,
      hypervisor_properties: p.hypervisor_properties,
      resource_properties: p.resource_properties,
      before_end: p.before_end,
      on_end: p.on_end,
      affinity: p.affinity,
      anti_affinity: p.anti_affinity,
    };
  }

  /** 409 with the earliest start at which the request would fit, when there is one. */
  private async noRoom(
    tx: EntityManager,
    q: HostQuery,
    min: number,
    window: Window,
  ): Promise<Conflict> {
    const duration = this.span(window).end.getTime() - window.start.getTime();
    // The earliest start a host could make, powered-off hosts booting in time included.
    const [first] = await this.readiness.earliestStarts(tx, q, min, duration, window.start, 1);
    if (first === undefined) {
      return new NotEnoughHosts(`: fewer than ${min} hosts match the request`);
    }
    const at = formatWireDate(first.start).slice(0, 16).replace('T', ' ');
    return new NotEnoughHosts(`; the earliest start with ${min} free matching host(s) is ${at}`);
  }
}
