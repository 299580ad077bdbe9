import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { MovedAllocation } from '../../pools/evacuation.js';
import { sql } from '../../database/sql.js';
import { hostJoin } from '../../pools/hosts.repository.js';
import { reservationJoin } from '../../model/lease-tables.js';
import { asHostParams, type HostParams } from './host-params.js';
import { AllocationsRepository } from './host-allocations.repository.js';
import { combine, type HostQuery, HostQueryBuilder } from '../../requirements/host-query.js';

interface AllocationToMove {
  id: string;
  reservation_id: string;
  lease_id: string;
  status: string;
  host_id: number;
  lower: Date;
  upper: Date;
  params: Record<string, unknown>;
}

/**
 * Moves the current and future allocations off some hosts onto other free hosts that
 * match each reservation's requirements (for a host leaving the pool, or failing):
 * the whole-host allocations of physical:host reservations.
 */
@Injectable()
export class HostMover {
  constructor(
    private readonly allocations: AllocationsRepository,
    private readonly queries: HostQueryBuilder,
  ) {}

  /**
   * Tries every allocation of `hostIds` that ends after `now`, of pending and active
   * reservations (locked, so that an ending one waits for the move or is not moved).
   * Returns what it did; entries with `to: null` could not be moved and were left as
   * they are.
   */
  async evacuate(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]> {
    const { rows } = await sql<AllocationToMove>(
      tx,
      `SELECT a.id, a.reservation_id, r.lease_id, r.status, a.host_id,
              lower(a.during) AS lower, upper(a.during) AS upper, r.params
         FROM host_allocations a ${reservationJoin('r', 'a.reservation_id')}
        WHERE a.host_id = ANY($1) AND upper(a.during) > $2
          AND r.status IN ('pending', 'active')
        ORDER BY lower(a.during), a.id
        FOR UPDATE OF a, r`,
      [hostIds, now],
    );
    const results: MovedAllocation[] = [];
    for (const a of rows) {
      const params = asHostParams(a.params);
      const base = await this.queries.build(
        tx,
        combine(params.hypervisor_properties, params.resource_properties),
      );
      const q = await this.keepPlacement(tx, base, a.reservation_id, params, hostIds, now);
      const start = a.lower > now ? a.lower : now;
      const [to] = await this.allocations.findFree(
        tx,
        q,
        { start, end: a.upper },
        { min: 1, max: 1 },
        { exclude: hostIds },
      );
      if (to !== undefined) {
        await sql(
          tx,
          `UPDATE host_allocations SET host_id = $2, during = tstzrange($3, $4, '[)') WHERE id = $1`,
          [a.id, to, start, a.upper],
        );
      }
      results.push({
        reservationId: a.reservation_id,
        leaseId: a.lease_id,
        status: a.status,
        from: a.host_id,
        to: to ?? null,
      });
    }
    return results;
  }

  /**
   * A replacement keeps the reservation's topology placement: with `affinity` it must
   * share the level's label with the reservation's other hosts, with `anti_affinity` it
   * must not. What cannot keep it does not move, and the reservation is flagged.
   */
  private async keepPlacement(
    tx: EntityManager,
    q: HostQuery,
    reservationId: string,
    params: HostParams,
    leaving: number[],
    now: Date,
  ): Promise<HostQuery> {
    const level = params.affinity ?? params.anti_affinity;
    if (level === null) return q;
    const { rows } = await sql<{ label: string | null }>(
      tx,
      `SELECT DISTINCT h.capabilities ->> $3 AS label FROM host_allocations a
         ${hostJoin('h', 'a.host_id')}
        WHERE a.reservation_id = $1 AND NOT (a.host_id = ANY($2)) AND upper(a.during) > $4`,
      [reservationId, leaving, level, now],
    );
    const labels = rows.flatMap((r) => (r.label === null ? [] : [r.label]));
    const p = [...q.params, level, labels];
    const key = `$${p.length - 1}::text`;
    const list = `$${p.length}::text[]`;
    const where =
      params.affinity !== null
        ? `h.capabilities ? ${key} AND (cardinality(${list}) = 0 OR h.capabilities ->> ${key} = ANY(${list}))`
        : `h.capabilities ? ${key} AND NOT (h.capabilities ->> ${key} = ANY(${list}))`;
    return { ...q, where: `(${q.where}) AND ${where}`, params: p };
  }
}
