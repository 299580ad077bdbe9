import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';

/** A host the manager may switch now. */
export interface Candidate {
  hostId: number;
  name: string;
}

/**
 * The hosts the stored plan (power_plan, kept up to date by PlanRefresh) says to switch
 * now, in the order the manager begins them: an index probe, then what it finds.
 */
@Injectable()
export class PlanCandidates {
  /** Hosts off that should be on, soonest needed first (those kept on first of all). */
  async ons(em: EntityManager, limit: number): Promise<Candidate[]> {
    const { rows } = await sql<{ host_id: number; name: string }>(
      em,
      `SELECT pp.host_id, h.hypervisor_hostname AS name
         FROM power_plan pp JOIN hosts h ON h.id = pp.host_id
        WHERE pp.act = 'on' ORDER BY pp.needed_at, pp.host_id LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ hostId: r.host_id, name: r.name }));
  }

  /**
   * Hosts on that should be off: those last seen with servers last, then the longest
   * off within the decision horizon [now, now + horizonMs) first, then by id (hosts last
   * seen with servers have no stored windows: among them, by id). Hosts off for the whole
   * horizon come first: when there are enough of them (a fleet just put under the plan),
   * they are the answer, found in id order without sorting every candidate.
   */
  async offs(em: EntityManager, now: Date, horizonMs: number, limit: number): Promise<Candidate[]> {
    const until = new Date(now.getTime() + horizonMs);
    const { rows: whole } = await sql<{ host_id: number; name: string }>(
      em,
      `SELECT pp.host_id, h.hypervisor_hostname AS name
         FROM power_plan pp JOIN hosts h ON h.id = pp.host_id
        WHERE pp.act = 'off'
          AND NOT EXISTS (SELECT 1 FROM host_power hp WHERE hp.host_id = pp.host_id AND hp.holds_servers)
          AND EXISTS (SELECT 1 FROM power_windows w WHERE w.host_id = pp.host_id
                         AND w.lo <= $1 AND (w.up IS NULL OR w.up >= $2))
        ORDER BY pp.host_id LIMIT $3`,
      [now, until, limit],
    );
    if (whole.length >= limit) return whole.map((r) => ({ hostId: r.host_id, name: r.name }));
    const { rows } = await sql<{ host_id: number; name: string }>(
      em,
      `SELECT pp.host_id, h.hypervisor_hostname AS name
         FROM power_plan pp JOIN hosts h ON h.id = pp.host_id
         LEFT JOIN host_power hp ON hp.host_id = pp.host_id
        WHERE pp.act = 'off'
        ORDER BY coalesce(hp.holds_servers, false),
                 (SELECT coalesce(sum(extract(epoch FROM
                           least(coalesce(w.up, $2), $2) - greatest(w.lo, $1))), 0)
                    FROM power_windows w
                   WHERE w.host_id = pp.host_id AND w.lo < $2 AND (w.up IS NULL OR w.up > $1)) DESC,
                 pp.host_id
        LIMIT $3`,
      [now, until, limit],
    );
    return rows.map((r) => ({ hostId: r.host_id, name: r.name }));
  }
}
