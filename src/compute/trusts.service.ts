import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Identity } from '../common/auth/identity.js';
import { ClimateError } from '../common/errors.js';
import { forgetTrust, terminatedWithTrusts } from '../model/lease-tables.js';
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

  constructor(
    private readonly dataSource: DataSource,
    @Inject(KEYSTONE) private readonly keystone: KeystoneClient | null,
  ) {}

  /** The caller's roles, but never `admin`: the trust only has to act as a member. */
  async create(caller: Identity): Promise<string | null> {
    const roles = caller.roles.filter((r) => r !== 'admin');
    if (this.keystone === null || caller.token === undefined || roles.length === 0) return null;
    try {
      return await this.keystone.createTrust(caller.token, { ...caller, roles });
    } catch (error) {
      // Keystone's own 502/503/504 stays what it was.
      throw new ClimateError(
        error instanceof ClimateError ? error.status : 502,
        'IdentityServiceError',
        `Could not make a Keystone trust for the lease: ${String(error)}`,
        { cause: error },
      );
    }
  }

  /** Removes a lease's trust; false when Keystone refused (the sweep tries again). */
  async delete(trustId: string | null): Promise<boolean> {
    if (this.keystone === null || trustId === null) return true;
    try {
      await this.keystone.deleteTrust(trustId);
      return true;
    } catch (error) {
      this.logger.warn({ msg: 'trust not deleted', trust_id: trustId, error: String(error) });
      return false;
    }
  }

  /** The trust of an ended lease goes; the lease forgets it once Keystone has. */
  async release(leaseId: string, trustId: string | null): Promise<void> {
    if (trustId !== null && (await this.delete(trustId))) {
      await forgetTrust(this.dataSource.manager, leaseId);
    }
  }

  /** Trusts of terminated leases whose deletion failed before. */
  async sweep(): Promise<void> {
    if (this.keystone === null) return;
    const rows = await terminatedWithTrusts(this.dataSource.manager);
    for (const lease of rows) await this.release(lease.id, lease.trust_id);
  }
}
