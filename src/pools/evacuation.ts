import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Port } from '../common/port.js';

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
 * plugin moves its own reservations; pools and hosts ask through EvacuationPort, so that
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

/**
 * Where pools and hosts ask for an evacuation. The manager's healing (events/, above the
 * plugins) registers itself into it: UpkeepModule imports PoolsModule, not the reverse.
 */
@Injectable()
export class EvacuationPort extends Port<Evacuation> implements Evacuation {
  constructor() {
    super("Evacuation (the manager's healing, UpkeepModule)");
  }

  evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]> {
    return this.target.evacuate(tx, hostIds, now);
  }

  heal(): Promise<MovedAllocation[]> {
    return this.target.heal();
  }

  resync(reservationIds: string[]): Promise<void> {
    return this.target.resync(reservationIds);
  }
}
