import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { Conflict, InvalidInput } from '../../common/errors.js';
import type { JsonObject } from '../../common/json.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import type { Lease } from '../../model/lease.entity.js';
import type { Reservation } from '../../model/reservation.entity.js';
import { occupied, type Span } from '../../pools/host-usage.js';
import type { PreparedReservation, ResourcePlugin, Window } from '../resource-plugin.js';
import type {
  FloatingIpReservationDetails,
  FloatingIpReservationFields,
} from './dto/floatingip-reservation.response.js';
import { FLOATING_IP_NETWORK, type FloatingIpNetwork } from './floating-ip-network.js';
import {
  asFloatingIpParams,
  FloatingIpParams,
  validateFloatingIpParams,
  validateFloatingIpUpdate,
} from './floatingip-params.js';
import { FloatingIpsRepository, type Picked } from './floatingips.repository.js';
import { FLOATINGIP_TYPE, toWire } from './floatingips.service.js';

export class NotEnoughFloatingIps extends Conflict {
  constructor(detail = '') {
    super(`Not enough floating IPs available${detail}`, 'NotEnoughFloatingIPAvailable');
  }
}

/** Addresses in the order PostgreSQL's inet sorts them (family, then value). */
export function byAddress(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/** Picks that keep losing addresses to concurrent creates before giving up. */
const ROUNDS = 3;

/**
 * `virtual:floatingip`: registered addresses of one external network, exclusive over the
 * lease's window widened by the cleaning time (the exclusion constraint on
 * floatingip_allocations makes double booking impossible). At the start each becomes a
 * floating IP of the lease's project in Neutron, tagged `blazar` and
 * `reservation:<id>`; at the end it is disassociated and deleted.
 */
@Injectable()
export class VirtualFloatingIpPlugin implements ResourcePlugin {
  readonly resourceType = FLOATINGIP_TYPE;

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: FloatingIpsRepository,
    @Inject(FLOATING_IP_NETWORK) private readonly network: FloatingIpNetwork,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  validate(values: Record<string, unknown>): JsonObject {
    return { ...validateFloatingIpParams(values) };
  }

  validateUpdate(reservation: Reservation, changes: Record<string, unknown>): JsonObject {
    if (reservation.status !== 'pending' && reservation.status !== 'active') {
      throw new InvalidInput(
        `A ${reservation.status} reservation cannot be updated`,
        'CantUpdateParameter',
      );
    }
    const current = asFloatingIpParams(reservation.params);
    return { ...validateFloatingIpUpdate(current, changes, reservation.status === 'active') };
  }

  span(window: Window): Span {
    return occupied(window, this.config.cleaningTimeMinutes);
  }

  /**
   * Picks and locks the addresses (the required ones first); the create's statement
   * checks them again after the locks (an allocation committed meanwhile) and writes
   * the allocations.
   */
  async prepare(
    tx: EntityManager,
    reservation: Reservation,
    window: Window,
  ): Promise<PreparedReservation> {
    const params = asFloatingIpParams(reservation.params);
    await this.checkRequired(tx, params);
    return this.choose(tx, reservation.id, params, this.span(window), [], 0);
  }

  private async checkRequired(em: EntityManager, params: FloatingIpParams): Promise<void> {
    const unknown = await this.repo.unknown(em, params.network_id, params.required_floatingips);
    if (unknown.length > 0) {
      throw new InvalidInput(
        `Required floating IPs ${unknown.join(', ')} are not registered as reservable on network ${params.network_id}`,
        'FloatingIPNotFound',
      );
    }
  }

  /** The required addresses, then those in `keep`, then others, free over `during` and locked. */
  private async pick(
    tx: EntityManager,
    reservationId: string | null,
    params: FloatingIpParams,
    during: Span,
    keep: Picked[],
    exclude: string[],
  ): Promise<Picked[]> {
    const base = { networkId: params.network_id, during, own: reservationId ?? undefined };
    const required =
      params.required_floatingips.length === 0
        ? []
        : await this.repo.pick(tx, {
            ...base,
            count: params.required_floatingips.length,
            only: params.required_floatingips,
          });
    if (required.length < params.required_floatingips.length) {
      throw new NotEnoughFloatingIps(': a required floating IP is reserved over the window');
    }
    const kept = keep.filter((k) => !required.some((r) => r.id === k.id));
    const chosen = [...required, ...kept.slice(0, Math.max(0, params.amount - required.length))];
    const more = params.amount - chosen.length;
    const others =
      more > 0
        ? await this.repo.pick(tx, {
            ...base,
            count: more,
            exclude: [...chosen.map((c) => c.id), ...exclude],
          })
        : [];
    const picked = [...chosen, ...others];
    if (picked.length < params.amount) {
      throw new NotEnoughFloatingIps(
        `: ${picked.length} of ${params.amount} free on network ${params.network_id}`,
      );
    }
    return picked;
  }

  private async choose(
    tx: EntityManager,
    reservationId: string,
    params: FloatingIpParams,
    during: Span,
    exclude: string[],
    round: number,
  ): Promise<PreparedReservation> {
    const picked = await this.pick(tx, null, params, during, [], exclude);
    const ids = picked.map((p) => p.id);
    const details: FloatingIpReservationDetails = {
      floatingips: picked.map((p) => p.address).sort(byAddress),
    };
    return {
      hosts: 0,
      details,
      write: (p, go) => [this.repo.insertSql(p, reservationId, ids, during, go)],
      recheck: (p) => this.repo.takenSql(p, reservationId, ids, during),
      again: async (next, stale) => {
        if (round + 1 >= ROUNDS) throw new NotEnoughFloatingIps();
        const lost = stale as string[];
        return this.choose(next, reservationId, params, during, [...exclude, ...lost], round + 1);
      },
    };
  }

  /**
   * New amount or window: keeps the addresses it holds that are still free over the
   * window (the required ones always), adds or drops the rest. A started reservation
   * never loses an address (its amount only grows).
   */
  async update(tx: EntityManager, reservation: Reservation, window: Window): Promise<void> {
    const params = asFloatingIpParams(reservation.params);
    const during = this.span(window);
    const held = await this.repo.held(tx, reservation.id);
    const fitting = await this.repo.freeAmong(tx, held, during, reservation.id);
    const ids = (await this.pick(tx, reservation.id, params, during, fitting, [])).map((p) => p.id);
    if (reservation.status === 'active' && held.some((id) => !ids.includes(id))) {
      throw new NotEnoughFloatingIps(': a started reservation cannot give up addresses it holds');
    }
    await this.repo.reshape(
      tx,
      reservation.id,
      ids.filter((id) => held.includes(id)),
      during,
    );
    await this.repo.allocate(
      tx,
      reservation.id,
      ids.filter((id) => !held.includes(id)),
      during,
    );
  }

  async release(tx: EntityManager, reservation: Reservation): Promise<void> {
    await this.repo.release(tx, reservation.id);
  }

  /** Each allocated address becomes a floating IP of the lease's project (idempotent). */
  async onStart(reservation: Reservation, lease: Lease): Promise<void> {
    const params = asFloatingIpParams(reservation.params);
    const held = await this.repo.addresses(this.dataSource.manager, [reservation.id]);
    for (const { address, subnet_id } of held) {
      await this.network.hold({
        address,
        networkId: params.network_id,
        subnetId: subnet_id,
        projectId: lease.projectId,
        reservationId: reservation.id,
      });
    }
  }

  async beforeEnd(): Promise<void> {}

  /** Each address is disassociated and deleted; one the user deleted already is fine. */
  async onEnd(reservation: Reservation): Promise<void> {
    const params = asFloatingIpParams(reservation.params);
    const held = await this.repo.addresses(this.dataSource.manager, [reservation.id]);
    for (const { address } of held) {
      await this.network.release({
        address,
        networkId: params.network_id,
        reservationId: reservation.id,
      });
    }
  }

  present(reservation: Reservation): FloatingIpReservationFields {
    const p = asFloatingIpParams(reservation.params);
    return {
      network_id: p.network_id,
      amount: p.amount,
      required_floatingips: p.required_floatingips,
    };
  }

  /** Blazar's enforcement allocations: the floating IP objects each reservation holds. */
  async allocated(em: EntityManager, reservations: Reservation[]): Promise<Map<string, object[]>> {
    const out = new Map<string, object[]>(reservations.map((r) => [r.id, []]));
    for (const { reservation_id, ...row } of await this.repo.heldBy(
      em,
      reservations.map((r) => r.id),
    )) {
      out.get(reservation_id)?.push(toWire(row));
    }
    return out;
  }

  /** The addresses each reservation holds. */
  async describe(
    em: EntityManager,
    reservations: Reservation[],
  ): Promise<Map<string, FloatingIpReservationDetails>> {
    const ids = reservations.map((r) => r.id);
    const out = new Map<string, FloatingIpReservationDetails>(
      ids.map((id) => [id, { floatingips: [] }]),
    );
    for (const row of await this.repo.addresses(em, ids)) {
      out.get(row.reservation_id)?.floatingips.push(row.address);
    }
    return out;
  }
}
