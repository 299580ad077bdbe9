import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Port } from '../common/port.js';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import type { Lease } from '../model/lease.entity.js';
import type { Reservation } from '../model/reservation.entity.js';

/** What enforcement reads of a lease as the API shows it. */
export interface WireLease {
  events: { id: string; time: string | null }[];
  reservations: { id: string }[];
}

/** The parts of a lease enforcement has read. */
interface Parts {
  lease: Lease;
  reservations: Reservation[];
  events: LeaseEvent[];
}

/** Maps a lease as the API shows it, read in `em`. */
export interface LeaseWireMapping {
  wire(em: EntityManager, parts: Parts): Promise<WireLease>;
}

/**
 * Where enforcement gets a lease as the API shows it. The lease use cases (leases/, above
 * enforcement) register their mapper into it: enforcement receives the bodies it sends,
 * it does not build them.
 */
@Injectable()
export class LeaseWires extends Port<LeaseWireMapping> implements LeaseWireMapping {
  constructor() {
    super("LeaseWires (the lease use cases' mapper, LeasesModule)");
  }

  wire(em: EntityManager, parts: Parts): Promise<WireLease> {
    return this.target.wire(em, parts);
  }
}
