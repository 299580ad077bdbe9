import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql, SqlParams } from '../database/sql.js';
import { hostsAs } from '../pools/hosts.repository.js';
import type { Interval, PowerState } from './power-plan.js';
import { hostPowerJoin } from './power.repository.js';

/** What selects the hosts of a page (see PowerPlanQuery). */
export interface PageFilter {
  after: number;
  limit: number;
  host?: string;
  state?: PowerState;
  inPlan?: boolean;
  /** Hosts with a planned transition (to this state, if given) in [from, until). */
  transitions?: { to?: 'on' | 'off'; from: Date; until: Date };
}

/** A host of the page, as it is now. */
export interface PageHost {
  hostId: number;
  name: string;
  state: PowerState;
  alwaysOn: boolean;
  holdsServers: boolean;
  keepOn: boolean;
}

interface PageRow {
  host_id: number;
  name: string;
  state: PowerState;
  always_on: boolean;
  holds_servers: boolean;
  keep_on: boolean;
}

/**
 * The hosts with a planned transition in the filter's window, from the stored plan: off
 * windows starting or ending in it (index ranges), and transitions due now (`now_to`).
 */
function withTransitions(
  p: SqlParams,
  now: Date,
  t: NonNullable<PageFilter['transitions']>,
): string {
  const [at, from, until] = [p.bind(now), p.bind(t.from), p.bind(t.until)];
  const parts: string[] = [];
  if (t.from <= now && now < t.until) {
    const to = t.to === undefined ? '' : ` AND now_to = ${p.bind(t.to)}`;
    parts.push(`SELECT host_id FROM power_plan WHERE now_to IS NOT NULL${to}`);
  }
  if (t.to !== 'on') {
    parts.push(`SELECT host_id FROM power_windows
                 WHERE lo > ${at} AND lo >= ${from} AND lo < ${until}`);
  }
  if (t.to !== 'off') {
    parts.push(`SELECT host_id FROM power_windows
                 WHERE up > ${at} AND up >= ${from} AND up < ${until}`);
  }
  return parts.length === 0 ? 'false' : `h.id IN (${parts.join(' UNION ')})`;
}

/** A page of the power plan's report: hosts by id after a marker, and their stored windows. */
@Injectable()
export class PlanPages {
  /** Up to `limit` hosts the filter selects, after `after`, by id. */
  async hosts(em: EntityManager, f: PageFilter, now: Date): Promise<PageHost[]> {
    const p = new SqlParams();
    const where = [`h.id > ${p.bind(f.after)}`];
    if (f.host !== undefined) {
      const id = /^[0-9]{1,9}$/.test(f.host) ? Number(f.host) : null;
      where.push(`(h.id = ${p.bind(id)} OR h.hypervisor_hostname = ${p.bind(f.host)})`);
    }
    if (f.state !== undefined) where.push(`coalesce(hp.state, 'on') = ${p.bind(f.state)}`);
    if (f.inPlan !== undefined) where.push(`coalesce(NOT pp.keep_on, false) = ${p.bind(f.inPlan)}`);
    if (f.transitions !== undefined) where.push(withTransitions(p, now, f.transitions));
    const { rows } = await sql<PageRow>(
      em,
      `SELECT h.id AS host_id, h.hypervisor_hostname AS name, coalesce(hp.state, 'on') AS state,
              coalesce(hp.always_on, false) AS always_on,
              coalesce(hp.holds_servers, false) AS holds_servers,
              coalesce(pp.keep_on, true) AS keep_on
         FROM ${hostsAs('h')} ${hostPowerJoin('hp', 'h.id')}
         LEFT JOIN power_plan pp ON pp.host_id = h.id
        WHERE ${where.join(' AND ')}
        ORDER BY h.id LIMIT ${p.bind(f.limit)}`,
      p.values,
    );
    return rows.map((r) => ({
      hostId: r.host_id,
      name: r.name,
      state: r.state,
      alwaysOn: r.always_on,
      holdsServers: r.holds_servers,
      keepOn: r.keep_on,
    }));
  }

  /** The stored off windows of `ids` not over by `now`, as the planner's intervals. */
  async windows(em: EntityManager, ids: number[], now: Date): Promise<Map<number, Interval[]>> {
    const { rows } = await sql<{ host_id: number; lo: Date; up: Date | null }>(
      em,
      // Host by host on the (host_id, lo) index, whatever the statistics say: `up > $2`
      // alone would match most of the fleet's windows.
      `SELECT w.host_id, w.lo, w.up FROM unnest($1::int[]) AS i(id)
         CROSS JOIN LATERAL (
           SELECT host_id, lo, up FROM power_windows
            WHERE host_id = i.id AND coalesce(up, 'infinity') > $2 ORDER BY lo) w
        ORDER BY w.host_id, w.lo`,
      [ids, now],
    );
    const windows = new Map<number, Interval[]>();
    for (const r of rows) {
      const list = windows.get(r.host_id) ?? [];
      list.push({
        start: Math.max(r.lo.getTime(), now.getTime()),
        end: r.up === null ? Infinity : r.up.getTime(),
      });
      windows.set(r.host_id, list);
    }
    return windows;
  }
}
