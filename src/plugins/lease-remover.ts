import { Injectable } from '@nestjs/common';
import type { Identity } from '../common/auth/identity.js';
import { Port } from '../common/port.js';

/** Deletes a lease as a caller would. */
export interface LeaseRemoval {
  delete(caller: Identity, id: string): Promise<void>;
}

/**
 * Where a plugin's upkeep ends a lease that cannot run. The lease use cases (leases/,
 * above the plugins) register their deleter into it, so plugins hold this port only.
 */
@Injectable()
export class LeaseRemover extends Port<LeaseRemoval> implements LeaseRemoval {
  constructor() {
    super("LeaseRemover (the lease use cases' deleter, LeasesModule)");
  }

  delete(caller: Identity, id: string): Promise<void> {
    return this.target.delete(caller, id);
  }
}
