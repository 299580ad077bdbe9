import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { hostJoin } from '../pools/hosts.repository.js';
import { holdsServersSql, hostPowerJoin } from './power.repository.js';

/** A host the manager may switch now. */
export interface Candidate {
  hostId: number;
  name: string;
}

interface Row {
  host_id: number;
  name: string;
  act: 'on' | 'off';
  needed_at: number;
  holds: boolean;
  off_s: number;
}

/** Candidates of each kind read and ordered at once at most; past that, by index. */
const FEW = 1000;

/** Seconds of the host's stored off windows within [$1, $2). */
const OFF_SECONDS = `(SELECT coalesce(sum(extract(epoch FROM
                        least(coalesce(w.up, $2), $2) - greatest(w.lo, $1))), 0)::float8
                      FROM power_windows w
                     WHERE w.host_id = pp.host_id AND w.lo < $2 AND (w.up IS NULL OR w.up > $1))`;

const SELECT = `SELECT pp.host_id, h.hypervisor_hostname AS name, pp.act, pp.needed_at,
                       coalesce(hp.holds_servers, false) AS holds, ${OFF_SECONDS} AS off_s
                  FROM power_plan pp ${hostJoin('h', 'pp.host_id')}
                  ${hostPowerJoin('hp', 'pp.host_id')}`;

const candidate = (r: { host_id: number; name: string }): Candidate => ({
  hostId: r.host_id,
  name: r.name,
});

/**
 * The hosts the stored plan (power_plan, kept up to date by PlanRefresh) says to switch
 * now, in the order the manager begins them. Power-ons: soonest needed first (those kept
 * on first of all). Power-offs: hosts last seen with servers last, then the longest off
 * within the decision horizon first, then by id (a host last seen with servers has no
 * stored windows: among them, by id). Usually few: read and ordered in one statement.
 */
@Injectable()
export class PlanCandidates {
  async pick(
    em: EntityManager,
    now: Date,
    horizonMs: number,
    max: number,
  ): Promise<{ ons: Candidate[]; offs: (wanted: number) => Promise<Candidate[]> }> {
    const until = new Date(now.getTime() + horizonMs);
    const { rows } = await sql<Row>(
      em,
      // Each kind in its partial index's order, so that the read walks that index however
      // stale the statistics are (after a fleet-wide change they say most hosts want one).
      `(${SELECT} WHERE pp.act = 'on' ORDER BY pp.needed_at, pp.host_id LIMIT ${FEW + 1})
       UNION ALL (${SELECT} WHERE pp.act = 'off' ORDER BY pp.host_id LIMIT ${FEW + 1})`,
      [now, until],
    );
    const ons = rows.filter((r) => r.act === 'on');
    const offs = rows.filter((r) => r.act === 'off');
    return {
      ons:
        ons.length > FEW
          ? await this.ons(em, max)
          : ons
              .sort((a, b) => a.needed_at - b.needed_at || a.host_id - b.host_id)
              .slice(0, max)
              .map(candidate),
      offs: async (wanted) =>
        offs.length > FEW
          ? this.offs(em, now, until, wanted)
          : offs
              .sort(
                (a, b) =>
                  Number(a.holds) - Number(b.holds) || b.off_s - a.off_s || a.host_id - b.host_id,
              )
              .slice(0, wanted)
              .map(candidate),
    };
  }

  /** Power-ons by index, however many hosts want one. */
  private async ons(em: EntityManager, limit: number): Promise<Candidate[]> {
    const { rows } = await sql<{ host_id: number; name: string }>(
      em,
      `SELECT pp.host_id, h.hypervisor_hostname AS name
         FROM power_plan pp ${hostJoin('h', 'pp.host_id')}
        WHERE pp.act = 'on' ORDER BY pp.needed_at, pp.host_id LIMIT $1`,
      [limit],
    );
    return rows.map(candidate);
  }

  /**
   * Power-offs when many hosts want one (a fleet just put under the plan): those off
   * for the whole horizon come first, found in id order without sorting every candidate;
   * when there are not enough of them, every candidate is ordered.
   */
  private async offs(
    em: EntityManager,
    now: Date,
    until: Date,
    limit: number,
  ): Promise<Candidate[]> {
    const { rows: whole } = await sql<{ host_id: number; name: string }>(
      em,
      `SELECT pp.host_id, h.hypervisor_hostname AS name
         FROM power_plan pp ${hostJoin('h', 'pp.host_id')}
        WHERE pp.act = 'off'
          AND NOT ${holdsServersSql('pp.host_id')}
          AND EXISTS (SELECT 1 FROM power_windows w WHERE w.host_id = pp.host_id
                         AND w.lo <= $1 AND (w.up IS NULL OR w.up >= $2))
        ORDER BY pp.host_id LIMIT $3`,
      [now, until, limit],
    );
    if (whole.length >= limit) return whole.map(candidate);
    const { rows } = await sql<Row>(
      em,
      `${SELECT} WHERE pp.act = 'off'
        ORDER BY coalesce(hp.holds_servers, false), ${OFF_SECONDS} DESC, pp.host_id LIMIT $3`,
      [now, until, limit],
    );
    return rows.map(candidate);
  }
}
