import type { Identity } from '../common/auth/identity.js';

/**
 * Deletes a lease as a caller would (a plugin's upkeep ends a lease that cannot run). The
 * lease use cases provide it (leases/), above the plugins, so plugins hold this port only.
 */
export abstract class LeaseRemover {
  abstract delete(caller: Identity, id: string): Promise<void>;
}
