import { Inject, Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { Identity } from '../../common/auth/identity.js';
import { Policy } from '../../common/auth/policy.js';
import { Clock } from '../../common/clock.js';
import { ClimateError, Conflict, InvalidInput, NotFound } from '../../common/errors.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { sql } from '../../database/sql.js';
import { hostJoin } from '../../pools/hosts.repository.js';
import { leaseJoin, reservationsAs } from '../../model/lease-tables.js';
import { withTransaction } from '../../database/transaction.js';
import { isUuid, newId } from '../../common/ids.js';
import type { ClaimRequest, ClaimResponse } from './dto/claim.dto.js';
import { Metrics } from '../../observability/metrics.js';

interface Slot {
  host_id: number;
  host: string;
  free: number;
}

/**
 * Servers scheduled into an instance reservation claim its slots. The reservation row is
 * locked for the claim, so concurrent claims never take more slots than it holds.
 */
@Injectable()
export class ClaimsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
    private readonly policy: Policy,
  ) {}

  async claim(caller: Identity, reservationId: string, body: ClaimRequest): Promise<ClaimResponse> {
    try {
      const claim = await this.take(caller, reservationId, body.server_id, body.host);
      this.metrics.claims.inc({ result: 'granted' });
      return claim;
    } catch (error) {
      if (error instanceof ClimateError && error.errorName === 'NoFreeSlot') {
        this.metrics.claims.inc({ result: 'refused' });
      }
      throw error;
    }
  }

  private take(
    caller: Identity,
    reservationId: string,
    serverId: string,
    wantedHost: string | undefined,
  ): Promise<ClaimResponse> {
    return withTransaction(this.dataSource, async (tx) => {
      await this.lockReservation(tx, caller, 'climate:claims:post', reservationId);
      const existing = await sql<{ id: string; host: string }>(
        tx,
        `SELECT c.id, h.hypervisor_hostname AS host FROM claims c ${hostJoin('h', 'c.host_id')}
          WHERE c.reservation_id = $1 AND c.server_id = $2`,
        [reservationId, serverId],
      );
      if (existing.rows.length > 0) {
        throw new Conflict(
          `Server ${serverId} already holds claim ${existing.rows[0].id}`,
          'ClaimExists',
        );
      }
      const slots = await this.freeSlots(tx, reservationId);
      const chosen =
        wantedHost === undefined
          ? slots.find((s) => s.free > 0)
          : slots.find((s) => s.host === wantedHost && s.free > 0);
      if (chosen === undefined) {
        throw new Conflict(
          wantedHost === undefined
            ? `Reservation ${reservationId} has no free slot`
            : `Reservation ${reservationId} has no free slot on host ${wantedHost}`,
          'NoFreeSlot',
        );
      }
      const id = newId();
      await sql(
        tx,
        `INSERT INTO claims (id, reservation_id, server_id, host_id, created_at) VALUES ($1, $2, $3, $4, $5)`,
        [id, reservationId, serverId, chosen.host_id, this.clock.now()],
      );
      const alternates = slots
        .filter((s) => s.host_id !== chosen.host_id && s.free > 0)
        .slice(0, this.config.maxAlternates)
        .map((s) => s.host);
      return {
        id,
        reservation_id: reservationId,
        server_id: serverId,
        host: chosen.host,
        alternates,
      };
    });
  }

  async release(caller: Identity, claimId: string): Promise<void> {
    if (!isUuid(claimId)) throw new NotFound('claim_id', claimId);
    await withTransaction(this.dataSource, async (tx) => {
      const { rows } = await sql<{ reservation_id: string }>(
        tx,
        `SELECT reservation_id FROM claims WHERE id = $1`,
        [claimId],
      );
      if (rows.length === 0) throw new NotFound('claim_id', claimId);
      await this.lockReservation(
        tx,
        caller,
        'climate:claims:delete',
        rows[0].reservation_id,
        'claim_id',
        claimId,
      );
      await sql(tx, `DELETE FROM claims WHERE id = $1`, [claimId]);
    });
    this.metrics.claims.inc({ result: 'released' });
  }

  /** Locks the reservation; only its project (or an admin) may claim, and only while it runs. */
  private async lockReservation(
    tx: EntityManager,
    caller: Identity,
    rule: string,
    reservationId: string,
    kind = 'reservation_id',
    shownId = reservationId,
  ): Promise<void> {
    const found = isUuid(reservationId)
      ? await sql<{ projectId: string; userId: string; status: string; resource_type: string }>(
          tx,
          `SELECT l.project_id AS "projectId", l.user_id AS "userId", r.status, r.resource_type FROM ${reservationsAs('r')}
             ${leaseJoin('l', 'r')} WHERE r.id = $1 FOR UPDATE OF r`,
          [reservationId],
        )
      : { rows: [] };
    const row = found.rows[0] ?? null;
    this.policy.assertCanSee(caller, row, kind, shownId);
    this.policy.enforce(caller, rule, row);
    if (row.resource_type !== 'virtual:instance') {
      throw new InvalidInput(`Reservation ${reservationId} is not a virtual:instance reservation`);
    }
    if (row.status !== 'active')
      throw new Conflict(
        `Reservation ${reservationId} is ${row.status}, not active`,
        'InvalidStatus',
      );
  }

  /** Per host of the reservation: slots it holds minus claims on it, fullest first. */
  private async freeSlots(tx: EntityManager, reservationId: string): Promise<Slot[]> {
    const { rows } = await sql<Slot>(
      tx,
      `SELECT a.host_id, h.hypervisor_hostname AS host,
              a.slots - (SELECT count(*) FROM claims c WHERE c.reservation_id = a.reservation_id
                                                     AND c.host_id = a.host_id)::int AS free
         FROM instance_allocations a ${hostJoin('h', 'a.host_id')}
        WHERE a.reservation_id = $1
        ORDER BY free, a.host_id`,
      [reservationId],
    );
    return rows;
  }
}
