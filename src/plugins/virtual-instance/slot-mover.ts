import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../../database/sql.js';
import { reservationJoin } from '../../model/lease-tables.js';
import { pickReplacement } from './pick-slots.js';
import { asInstanceParams } from './instance-params.js';
import { combine, HostQueryBuilder } from '../../requirements/host-query.js';
import type { MovedAllocation } from '../../pools/evacuation.js';
import { SlotsRepository } from './slots.repository.js';

interface SlotsToMove {
  reservation_id: string;
  lease_id: string;
  status: string;
  host_id: number;
  slots: number;
  lower: Date;
  upper: Date;
  params: Record<string, unknown>;
}

/**
 * Moves the current and future instance slots off some hosts (failed, or leaving the
 * reservation pool), a reservation at a time: all of its slots there move, or none do.
 */
@Injectable()
export class SlotMover {
  constructor(
    private readonly slots: SlotsRepository,
    private readonly queries: HostQueryBuilder,
  ) {}

  /** The slots of `resourceType`'s reservations (flavor:instance has slots too). */
  async evacuate(
    tx: EntityManager,
    hostIds: number[],
    now: Date,
    resourceType = 'virtual:instance',
  ): Promise<MovedAllocation[]> {
    const { rows } = await sql<SlotsToMove>(
      tx,
      `SELECT a.reservation_id, r.lease_id, r.status, a.host_id, a.slots,
              lower(a.during) AS lower, upper(a.during) AS upper, r.params
         FROM instance_allocations a ${reservationJoin('r', 'a.reservation_id')}
        WHERE a.host_id = ANY($1) AND upper(a.during) > $2
          AND r.status IN ('pending', 'active') AND r.resource_type = $3
        ORDER BY lower(a.during), a.reservation_id, a.host_id
        FOR UPDATE OF a, r`,
      [hostIds, now, resourceType],
    );
    const byReservation = new Map<string, SlotsToMove[]>();
    for (const row of rows) {
      byReservation.set(row.reservation_id, [
        ...(byReservation.get(row.reservation_id) ?? []),
        row,
      ]);
    }
    const results: MovedAllocation[] = [];
    for (const [reservationId, leaving] of byReservation) {
      const to = await this.move(tx, reservationId, leaving, hostIds, now);
      for (const row of leaving) {
        results.push({
          reservationId,
          leaseId: row.lease_id,
          status: row.status,
          from: row.host_id,
          to,
        });
      }
    }
    return results;
  }

  /** Returns the first host the slots went to, or null when they could not move. */
  private async move(
    tx: EntityManager,
    reservationId: string,
    leaving: SlotsToMove[],
    hostIds: number[],
    now: Date,
  ): Promise<number | null> {
    const params = asInstanceParams(leaving[0].params);
    const lower = Math.min(...leaving.map((r) => r.lower.getTime()));
    const during = {
      start: new Date(Math.max(lower, now.getTime())),
      end: new Date(Math.max(...leaving.map((r) => r.upper.getTime()))),
    };
    const count = leaving.reduce((n, r) => n + r.slots, 0);
    const kept = new Map(
      [...(await this.slots.placement(tx, reservationId))].filter(([h]) => !hostIds.includes(h)),
    );
    const q = await this.queries.build(tx, combine(params.resource_properties));
    const placement = await this.slots.placeLocked(
      tx,
      q,
      during,
      params,
      {
        exclude: hostIds,
        need: { amount: count, oneHost: params.affinity === true },
        prefer: [...kept.keys()],
      },
      (hosts) => pickReplacement(hosts, count, params.affinity, kept),
    );
    if (placement === null) return null;
    // A claim is a slot on a host: the claims there leave with the slots.
    await sql(tx, `DELETE FROM claims WHERE reservation_id = $1 AND host_id = ANY($2::int[])`, [
      reservationId,
      hostIds,
    ]);
    await sql(
      tx,
      `DELETE FROM instance_allocations WHERE reservation_id = $1 AND host_id = ANY($2::int[])`,
      [reservationId, hostIds],
    );
    await this.slots.add(tx, reservationId, placement, params, during);
    return [...placement.keys()][0];
  }
}
