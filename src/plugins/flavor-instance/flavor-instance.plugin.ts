import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { Clock } from '../../common/clock.js';
import { Conflict, InvalidInput } from '../../common/errors.js';
import type { JsonObject } from '../../common/json.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../../compute/compute-driver.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { mergeParams } from '../../model/lease-tables.js';
import type { Lease } from '../../model/lease.entity.js';
import type { Reservation } from '../../model/reservation.entity.js';
import type { MovedAllocation } from '../../pools/evacuation.js';
import { NotEnoughHosts } from '../physical-host/physical-host.plugin.js';
import type {
  PreparedReservation,
  ReserveContext,
  ResourcePlugin,
  Window,
} from '../resource-plugin.js';
import type { FilterAnswer, SchedulingRequest } from '../scheduling.js';
import { InstancePool, type SlotReservation } from '../virtual-instance/instance-pool.js';
import { SlotMover } from '../virtual-instance/slot-mover.js';
import { scheduleSlots } from '../virtual-instance/slot-scheduling.js';
import { SlotsRepository } from '../virtual-instance/slots.repository.js';
import { VirtualInstancePlugin } from '../virtual-instance/virtual-instance.plugin.js';
import type { FlavorReservationFields } from './dto/flavor-reservation.response.js';
import {
  asFlavorParams,
  flavorParams,
  hostsRequirement,
  sizeFlavor,
  validateFlavorRequest,
  type FlavorParams,
} from './flavor-params.js';

const TYPE = 'flavor:instance';

/** virtual:instance's choice of slots, without its claims (this type has none). */
function withoutClaims(prepared: PreparedReservation): PreparedReservation {
  const again = prepared.again;
  return {
    ...prepared,
    details: {},
    again: again && (async (tx, stale) => withoutClaims(await again(tx, stale))),
  };
}

/** Blazar's answer to any change of a lease holding a flavor:instance reservation. */
export class FlavorUpdateRefused extends Conflict {
  constructor() {
    super(
      "Updating leases for 'flavor:instance' type reservations is not yet supported.",
      'NotImplemented',
    );
  }
}

/**
 * `flavor:instance`: servers of an existing flavor, as Blazar's flavor plugin reserves
 * them. The flavor (visible to the project) is read from the compute service and sized
 * into `virtual:instance` slots, with their exact capacity over time, moves and Placement
 * enforcement; the reservation flavor copies the source flavor (extra specs included).
 */
@Injectable()
export class FlavorInstancePlugin implements ResourcePlugin {
  readonly resourceType = TYPE;
  /** A server group, when affinity is set, belongs to the tenant. */
  readonly actsAsUser = true;

  constructor(
    private readonly dataSource: DataSource,
    private readonly instances: VirtualInstancePlugin,
    private readonly slots: SlotsRepository,
    private readonly mover: SlotMover,
    private readonly pool: InstancePool,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    @Inject(CONFIG) private readonly config: Config,
    private readonly clock: Clock,
  ) {}

  async validate(values: Record<string, unknown>, context: ReserveContext): Promise<JsonObject> {
    const request = validateFlavorRequest(values);
    const flavor = await this.driver.getFlavor(request.flavorId, context.projectId);
    if (flavor === null) {
      throw new InvalidInput(`Flavor ${request.flavorId} could not be found.`, 'FlavorNotFound');
    }
    const size = sizeFlavor(flavor, this.config.cpuAllocationRatio);
    let hosts: string[] | null = null;
    if (size.required.length + size.forbidden.length > 0) {
      hosts = await this.driver.hostsWithTraits(size.required, size.forbidden);
      if (hosts.length === 0) {
        throw new NotEnoughHosts(`: no host has the traits flavor ${flavor.id} asks for`);
      }
    }
    const params: FlavorParams = flavorParams(request, flavor, size, hostsRequirement(hosts));
    return params;
  }

  /** Blazar refuses any update of such a lease but a rename (409), and so does Climate. */
  leaseChangeRefusal(): Error {
    return new FlavorUpdateRefused();
  }

  validateUpdate(): JsonObject {
    throw new FlavorUpdateRefused();
  }

  async update(): Promise<void> {
    throw new FlavorUpdateRefused();
  }

  async prepare(
    tx: EntityManager,
    reservation: Reservation,
    window: Window,
  ): Promise<PreparedReservation> {
    return withoutClaims(await this.instances.prepare(tx, reservation, window));
  }

  release(tx: EntityManager, reservation: Reservation): Promise<void> {
    return this.instances.release(tx, reservation);
  }

  evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]> {
    return this.mover.evacuate(tx, hostIds, now, TYPE);
  }

  outOfLine(em: EntityManager): Promise<string[]> {
    return this.slots.outOfLine(em, TYPE);
  }

  /** Servers booted with the reservation flavor go to its hosts only. */
  schedule(em: EntityManager, request: SchedulingRequest): Promise<FilterAnswer | null> {
    return scheduleSlots(em, request, this.clock.now());
  }

  async onStart(reservation: Reservation, lease: Lease): Promise<void> {
    const made = await this.pool.start(this.slotReservation(reservation, lease));
    const owned = { server_group_id: made.serverGroupId, aggregate_id: made.aggregateId };
    reservation.params = { ...reservation.params, ...owned };
    // Written at once, so that a retried start finds the group it made.
    await mergeParams(this.dataSource.manager, reservation.id, JSON.stringify(owned));
  }

  async beforeEnd(): Promise<void> {}

  async onEnd(reservation: Reservation, lease: Lease): Promise<void> {
    await this.pool.end(this.slotReservation(reservation, lease));
  }

  /** Blazar's keys: the source flavor's size, and its JSON in resource_properties. */
  present(reservation: Reservation): FlavorReservationFields {
    const p = asFlavorParams(reservation.params);
    return {
      vcpus: p.reservation_flavor.vcpus,
      memory_mb: p.reservation_flavor.ram_mb,
      disk_gb: p.reservation_flavor.disk_gb,
      amount: p.amount,
      affinity: p.affinity,
      resource_properties: JSON.stringify(p.source_flavor),
      flavor_id: reservation.id,
      server_group_id: p.server_group_id ?? null,
      aggregate_id: p.aggregate_id ?? null,
    };
  }

  private slotReservation(r: Reservation, lease: Lease): SlotReservation {
    const p = asFlavorParams(r.params);
    const f = p.reservation_flavor;
    return {
      id: r.id,
      projectId: lease.projectId,
      trustId: lease.trustId,
      vcpus: f.vcpus,
      memoryMb: f.ram_mb,
      diskGb: f.disk_gb,
      affinity: p.affinity,
      serverGroupId: p.server_group_id ?? null,
      retiredServerGroupIds: [],
      flavor: { ephemeralGb: f.ephemeral_gb, swapMb: f.swap_mb, extraSpecs: f.extra_specs },
    };
  }
}
