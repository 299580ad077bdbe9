import { Injectable, Inject, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Identity } from '../common/auth/identity.js';
import { Policy } from '../common/auth/policy.js';
import { Clock } from '../common/clock.js';
import { InvalidStatus } from '../common/errors.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withTransaction } from '../database/transaction.js';
import { LeaseNotifier } from './lease-notifier.js';
import { ReservationActions } from '../reservations/reservation-actions.js';
import { Lease } from '../model/lease.entity.js';
import { checkVersion } from './lease-rules.js';
import type { LeaseParts } from './lease.mapper.js';
import { LeasesRepository } from './leases.repository.js';

/** Deleting a lease: what its reservations hold goes back, then the lease goes. */
@Injectable()
export class LeaseDeleter {
  private readonly logger = new Logger('leases');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: LeasesRepository,
    private readonly actions: ReservationActions,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly notifier: LeaseNotifier,
    private readonly policy: Policy,
  ) {}

  /**
   * Marks the lease DELETING (refused while a start or end runs), ends what its
   * reservations hold through the plugins, then removes it all.
   */
  async delete(caller: Identity, id: string, ifMatch?: string): Promise<void> {
    const parts = await withTransaction(this.dataSource, async (tx) => {
      const lease = await this.repo.lock(tx, id);
      this.policy.assertCanSee(caller, lease, 'lease_id', id);
      this.policy.enforce(caller, 'blazar:leases:delete', lease);
      checkVersion(lease, ifMatch);
      const found = await this.repo.parts(tx, lease);
      const running = found.events.some(
        (e) => e.status === 'IN_PROGRESS' && e.eventType !== 'before_end_lease',
      );
      if (running) {
        throw new InvalidStatus(`Lease ${id} is starting or ending; try again when it is done`);
      }
      await tx.update(Lease, { id }, { status: 'DELETING', updatedAt: this.clock.now() });
      return found;
    });
    // A failure (or a crash) here leaves the lease DELETING: the manager finishes it.
    await this.finishDelete(parts);
  }

  /**
   * Finishes the deletes that did not finish: leases DELETING for longer than an event's
   * claim (the process that began died, or the compute service failed). Each is claimed
   * by moving its `updated_at` on, so replicas do not take the same one; the actions are
   * idempotent anyway. Returns how many it removed.
   */
  async finishDeletes(): Promise<number> {
    const stale = new Date(this.clock.now().getTime() - this.config.eventClaimTtlMs);
    let done = 0;
    for (;;) {
      const parts = await withTransaction(this.dataSource, async (tx) => {
        const lease = await tx
          .createQueryBuilder(Lease, 'l')
          .where(`l.status = 'DELETING' AND l.updated_at < :stale`, { stale })
          .setLock('pessimistic_write')
          .setOnLocked('skip_locked')
          .getOne();
        if (lease === null) return null;
        await tx.update(Lease, { id: lease.id }, { updatedAt: this.clock.now() });
        return this.repo.parts(tx, lease);
      });
      if (parts === null) return done;
      try {
        await this.finishDelete(parts);
        done++;
      } catch (error) {
        this.logger.warn({
          msg: 'delete not finished; retried later',
          lease_id: parts.lease.id,
          error: String(error),
        });
      }
    }
  }

  private async finishDelete(parts: LeaseParts): Promise<void> {
    await this.actions.end(parts.lease, parts.reservations);
    await withTransaction(this.dataSource, async (tx) => {
      const lease = await this.repo.lock(tx, parts.lease.id);
      if (lease === null) return;
      await this.notifier.add(tx, 'lease.delete', await this.repo.parts(tx, lease));
      await tx.delete(Lease, { id: lease.id });
    });
    this.logger.log({ msg: 'lease deleted', lease_id: parts.lease.id });
  }
}
