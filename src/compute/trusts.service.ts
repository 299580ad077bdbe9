import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Identity } from '../common/auth/identity.js';
import { ClimateError } from '../common/errors.js';
import type { KeystoneClient } from './keystone.client.js';

export const KEYSTONE = Symbol('KEYSTONE');

/**
 * Keystone trusts, as Blazar keeps them: made from the caller's token when a lease is
 * created, so that the manager can later act in the tenant's own project (a server
 * group the tenant can boot into), and removed when the lease ends. Without Keystone
 * there is no trust and Climate acts as itself.
 */
@Injectable()
export class TrustsService {
  private readonly logger = new Logger('trusts');

  constructor(@Inject(KEYSTONE) private readonly keystone: KeystoneClient | null) {}

  async create(caller: Identity): Promise<string | null> {
    if (this.keystone === null || caller.token === undefined) return null;
    try {
      return await this.keystone.createTrust(caller.token, caller);
    } catch (error) {
      throw new ClimateError(
        502,
        'IdentityServiceError',
        `Could not make a Keystone trust for the lease: ${String(error)}`,
      );
    }
  }

  /** Best effort: a trust left behind only lets Climate act for a lease that is gone. */
  async delete(trustId: string | null): Promise<void> {
    if (this.keystone === null || trustId === null) return;
    try {
      await this.keystone.deleteTrust(trustId);
    } catch (error) {
      this.logger.warn({ msg: 'trust not deleted', trust_id: trustId, error: String(error) });
    }
  }
}
