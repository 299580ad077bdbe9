import type { EntityManager } from 'typeorm';

/** One allocation (or a reservation's slots) that had to leave a host. */
export interface MovedAllocation {
  reservationId: string;
  leaseId: string;
  status: string;
  from: number;
  to: number | null;
}

/**
 * Moving reservations off hosts that fail or leave the reservation pool. Each resource
 * plugin moves its own reservations; pools and hosts ask through this token, so that
 * they need not know the plugins.
 */
export interface Evacuation {
  /** Moves what is held on `hostIds` after `now`, inside `tx`; `to: null` could not move. */
  evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]>;
  /** Runs a heal of every unreservable host now. */
  heal(): Promise<MovedAllocation[]>;
  /** Brings started reservations whose hosts changed in line in the compute service. */
  resync(reservationIds: string[]): Promise<void>;
}

export const EVACUATION = Symbol('EVACUATION');
