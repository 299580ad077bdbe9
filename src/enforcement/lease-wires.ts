import type { EntityManager } from 'typeorm';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import type { Lease } from '../model/lease.entity.js';
import type { Reservation } from '../model/reservation.entity.js';

/** What enforcement reads of a lease as the API shows it. */
export interface WireLease {
  events: { id: string; time: string | null }[];
  reservations: { id: string }[];
}

/**
 * Maps a lease as the API shows it. The lease use cases (leases/) provide it: enforcement
 * receives the bodies it sends, it does not build them.
 */
export abstract class LeaseWires {
  abstract wire(
    em: EntityManager,
    parts: { lease: Lease; reservations: Reservation[]; events: LeaseEvent[] },
  ): Promise<WireLease>;
}
