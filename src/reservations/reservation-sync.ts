import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { claimResyncs, finishResync } from '../model/lease-tables.js';
import { Lease } from '../model/lease.entity.js';
import { Reservation } from '../model/reservation.entity.js';
import { ReservationActions } from './reservation-actions.js';

/** Reservations taken per poll. */
const BATCH = 8;

/**
 * Started reservations an update changed get their resources in line (a new host in
 * their pool, more slots in the compute service) by the manager, not by the API
 * process that made the update: the update only records `resync_at` in its
 * transaction. Each is claimed by moving `resync_at` past the claim time, so replicas
 * do not take the same one and one that died is taken again; it is cleared only if no
 * newer update asked again meanwhile.
 */
@Injectable()
export class ReservationSync {
  private readonly logger = new Logger('manager');

  constructor(
    private readonly dataSource: DataSource,
    private readonly actions: ReservationActions,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** Claims the due resyncs; returns the work to run (one promise per reservation). */
  async claim(): Promise<Promise<void>[]> {
    const shared = this.clock.shared();
    const em = this.dataSource.manager;
    const rows = await claimResyncs(em, shared, this.config.eventClaimTtlMs, BATCH);
    return rows.map((r) => this.run(r.id, r.claimed));
  }

  private async run(id: string, claimed: Date): Promise<void> {
    const em = this.dataSource.manager;
    try {
      const reservation = await em.findOneBy(Reservation, { id });
      const lease = reservation && (await em.findOneBy(Lease, { id: reservation.leaseId }));
      if (reservation && lease) await this.actions.refresh(lease, [reservation]);
      await finishResync(em, id, claimed);
    } catch (error) {
      // Left claimed: taken again when the claim passes.
      this.logger.warn({
        msg: 'bringing a reservation in line after its update failed; will retry',
        reservation_id: id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}
