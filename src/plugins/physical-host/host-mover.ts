import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { MovedAllocation } from '../../pools/evacuation.js';
import { sql } from '../../database/sql.js';
import { asHostParams } from './host-params.js';
import { AllocationsRepository } from '../../pools/allocations.repository.js';
import { combine, HostQueryBuilder } from '../../scheduler/host-query.js';

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
         FROM host_allocations a JOIN reservations r ON r.id = a.reservation_id
        WHERE a.host_id = ANY($1) AND upper(a.during) > $2
          AND r.status IN ('pending', 'active')
        ORDER BY lower(a.during), a.id
        FOR UPDATE OF a, r`,
      [hostIds, now],
    );
    const results: MovedAllocation[] = [];
    for (const a of rows) {
      const params = asHostParams(a.params);
      const q = await this.queries.build(
        tx,
        combine(params.hypervisor_properties, params.resource_properties),
      );
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
}
