import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { BUSY_MARKED_SQL } from '../pools/host-busy.js';
import { hostExistsSql, hostsAs } from '../pools/hosts.repository.js';
import type { PowerState } from './power-plan.js';
import { powerLogAs } from './power.repository.js';
import type { StoredPlan } from './stored-plan.js';

/** pg_advisory_xact_lock key of the plan's refresh (any constant no other lock uses). */
const REFRESH_LOCK = 7_310_045;

/** Milliseconds of an SQL interval, exactly (numeric). */
const ms = (interval: string) => `(extract(epoch FROM (${interval})) * 1000)`;

/** The stretch tables and the running sums over each (see the PowerPlanStore migration). */
const STRETCHES = {
  plan: { table: 'power_windows', sums: `('plan_now', 'plan_next')` },
  past: { table: 'power_off_spans', sums: `('past_now', 'past_back')` },
} as const;
type Stretches = keyof typeof STRETCHES;

/**
 * Adds to each running sum of `kind` (at its point `at`) the stretches of `rows` (lo,
 * up, sg: +1 added, -1 removed): c, those open at it; f, their milliseconds before it.
 */
function addToSums(kind: Stretches, rows: string): string {
  return `UPDATE power_sums p SET c = p.c + d.c, f = p.f + d.f
    FROM (SELECT s.name,
                 coalesce(sum(x.sg) FILTER (WHERE x.lo < s.at AND (x.up IS NULL OR s.at <= x.up)), 0) AS c,
                 coalesce(sum(x.sg * greatest(0, ${ms('least(coalesce(x.up, s.at), s.at) - x.lo')})), 0) AS f
            FROM power_sums s CROSS JOIN ${rows} x
           WHERE s.name IN ${STRETCHES[kind].sums} GROUP BY s.name) d
   WHERE p.name = d.name`;
}

/** The events (a stretch's start +1, its end -1) of `table` in [least(a, b), greatest(a, b)). */
function eventsBetween(table: string, a: string, b: string): string {
  return `SELECT lo AS t, 1 AS s FROM ${table} WHERE lo >= least(${a}, ${b}) AND lo < greatest(${a}, ${b})
          UNION ALL
          SELECT up, -1 FROM ${table} WHERE up >= least(${a}, ${b}) AND up < greatest(${a}, ${b})`;
}

export interface PlanSummary {
  /** Hosts per power state. */
  states: Record<PowerState, number>;
  /** Milliseconds of host time planned off over the next 30 days. */
  nextMs: number;
  /** Milliseconds of host time spent off over the past 30 days. */
  pastMs: number;
}

/**
 * The power plan as kept between runs: power_plan, power_windows, power_off_spans,
 * power_sums, power_state_counts and the change log (the PowerPlanStore migration).
 * Written only by the refresh, one at a time under its lock.
 */
@Injectable()
export class PlanStore {
  async lock(tx: EntityManager): Promise<void> {
    await sql(tx, `SELECT pg_advisory_xact_lock(${REFRESH_LOCK})`);
  }

  /**
   * Records `settings` as the plan's; returns every host (and every host planned) when
   * they differed: the plan is then computed again for all.
   */
  async resetSettings(tx: EntityManager, settings: string): Promise<number[]> {
    const { rows } = await sql<{ hosts: number[] | null }>(
      tx,
      `WITH changed AS (
         UPDATE power_plan_settings SET settings = $1 WHERE id = 1 AND settings <> $1 RETURNING id)
       SELECT array_agg(id) AS hosts FROM (
         SELECT h.id FROM ${hostsAs('h')} WHERE EXISTS (SELECT 1 FROM changed)
         UNION SELECT host_id FROM power_plan WHERE EXISTS (SELECT 1 FROM changed)) a`,
      [settings],
    );
    return rows[0].hosts ?? [];
  }

  /**
   * Whether a host is marked for the next refresh: its situation changed (power_plan_changes)
   * or its allocations or pool did (host_busy_changes, read by the refresh first).
   */
  async marked(em: EntityManager): Promise<boolean> {
    const { rows } = await sql<{ marked: boolean }>(
      em,
      `SELECT EXISTS (SELECT 1 FROM power_plan_changes)
             OR ${BUSY_MARKED_SQL} AS marked`,
    );
    return rows[0].marked;
  }

  /** The hosts marked changed, taken (a change committed meanwhile stays for the next). */
  async takeChanges(tx: EntityManager): Promise<number[]> {
    const { rows } = await sql<{ hosts: number[] | null }>(
      tx,
      `WITH taken AS (DELETE FROM power_plan_changes RETURNING host_id)
       SELECT array_agg(DISTINCT host_id) AS hosts FROM taken`,
    );
    return rows[0].hosts ?? [];
  }

  /**
   * Hosts whose plan can have changed by the clock alone, and whether the plan was
   * computed with other settings than `settings`.
   */
  async due(
    tx: EntityManager,
    now: Date,
    settings: string,
  ): Promise<{ due: number[]; otherSettings: boolean }> {
    const { rows } = await sql<{ due: number[]; other: boolean }>(
      tx,
      `SELECT array(SELECT host_id FROM power_plan WHERE recheck_at <= $1) AS due,
              (SELECT settings FROM power_plan_settings WHERE id = 1) <> $2 AS other`,
      [now, settings],
    );
    return { due: rows[0].due, otherSettings: rows[0].other };
  }

  /**
   * Replaces the off windows of `ids` with `windows`, keeping the running sums: one
   * statement (its parts see the table as it was before it).
   */
  async replaceWindows(
    tx: EntityManager,
    ids: number[],
    windows: { hostId: number; start: number; end: number | null }[],
  ): Promise<void> {
    await sql(
      tx,
      `WITH gone AS (DELETE FROM power_windows WHERE host_id = ANY($1::int[]) RETURNING lo, up),
       added AS (
         INSERT INTO power_windows (host_id, lo, up)
         SELECT * FROM unnest($2::int[], $3::timestamptz[], $4::timestamptz[]) RETURNING lo, up),
       x AS (SELECT lo, up, -1 AS sg FROM gone UNION ALL SELECT lo, up, 1 FROM added)
       ${addToSums('plan', 'x')}`,
      [
        ids,
        windows.map((w) => w.hostId),
        windows.map((w) => new Date(w.start)),
        windows.map((w) => (w.end === null ? null : new Date(w.end))),
      ],
    );
  }

  /**
   * Brings the off spans of `ids` up to date with power_log, keeping the running sums:
   * each host's latest span and the ones after it are read again from the log; a host
   * deleted (its log with it) loses them all.
   */
  async refreshSpans(tx: EntityManager, ids: number[]): Promise<void> {
    if (ids.length === 0) return;
    await sql(
      tx,
      `WITH m AS (
         SELECT i AS host_id,
                CASE WHEN ${hostExistsSql('i')}
                     THEN (SELECT max(lo) FROM power_off_spans s WHERE s.host_id = i) END AS since
           FROM unnest($1::int[]) i),
       gone AS (
         DELETE FROM power_off_spans s USING m
          WHERE s.host_id = m.host_id AND (m.since IS NULL OR s.lo >= m.since) RETURNING s.lo, s.up),
       log AS (
         SELECT l.host_id, l.state, l.at,
                lead(l.at) OVER (PARTITION BY l.host_id ORDER BY l.at, l.id) AS next
           FROM ${powerLogAs('l')} JOIN m ON m.host_id = l.host_id
          WHERE m.since IS NULL OR l.at >= m.since),
       added AS (
         INSERT INTO power_off_spans (host_id, lo, up)
         SELECT host_id, at, next FROM log WHERE state = 'off' RETURNING lo, up),
       x AS (SELECT lo, up, -1 AS sg FROM gone UNION ALL SELECT lo, up, 1 FROM added)
       ${addToSums('past', 'x')}`,
      [ids],
    );
  }

  /**
   * Stores the plans of `ids`' hosts that exist (`plans`), forgets the others', and
   * keeps the counts per power state: one statement.
   */
  async writePlans(
    tx: EntityManager,
    ids: number[],
    plans: { hostId: number; state: PowerState; plan: StoredPlan }[],
    now: Date,
  ): Promise<void> {
    const column = <T>(f: (p: (typeof plans)[number]) => T) => plans.map(f);
    await sql(
      tx,
      `WITH old AS (SELECT state FROM power_plan WHERE host_id = ANY($10::int[])),
       gone AS (
         DELETE FROM power_plan WHERE host_id = ANY($10::int[]) AND NOT host_id = ANY($1::int[])),
       put AS (
         INSERT INTO power_plan (host_id, state, keep_on, want, now_to, act, needed_at, recheck_at, computed_at)
         SELECT *, $9::timestamptz FROM unnest($1::int[], $2::text[], $3::bool[], $4::text[], $5::text[],
                                               $6::text[], $7::float8[], $8::timestamptz[])
         ON CONFLICT (host_id) DO UPDATE SET state = excluded.state, keep_on = excluded.keep_on,
           want = excluded.want, now_to = excluded.now_to, act = excluded.act,
           needed_at = excluded.needed_at, recheck_at = excluded.recheck_at,
           computed_at = excluded.computed_at),
       d AS (
         SELECT state, sum(n) AS n FROM (
           SELECT state, -1 AS n FROM old UNION ALL SELECT s, 1 FROM unnest($2::text[]) s) c
          GROUP BY state HAVING sum(n) <> 0)
       UPDATE power_state_counts c SET n = c.n + d.n FROM d WHERE c.state = d.state`,
      [
        column((p) => p.hostId),
        column((p) => p.state),
        column((p) => p.plan.keepOn),
        column((p) => p.plan.want),
        column((p) => p.plan.nowTo),
        column((p) => p.plan.act),
        // float8 takes 'Infinity' and '-Infinity' as text, not JSON's null.
        column((p) => String(p.plan.neededAt)),
        column((p) => new Date(p.plan.recheckAt)),
        now,
        ids,
      ],
    );
  }

  /**
   * Moves the running sums to `now` (and 30 days either side), reading only the
   * stretches that start or end between where each was and where it goes, and returns
   * the fleet's figures.
   */
  async summary(tx: EntityManager, now: Date, days30Ms: number): Promise<PlanSummary> {
    const event = (name: string, table: string) =>
      `SELECT t, s FROM (${eventsBetween(table, 'm.at', 'm.target')}) e WHERE m.name LIKE '${name}%'`;
    const { rows } = await sql<{
      next_ms: number;
      past_ms: number;
      states: Record<string, number>;
    }>(
      tx,
      `WITH m AS (
         SELECT s.name, s.at, s.c, s.f, t.target
           FROM power_sums s JOIN (VALUES ('plan_now', $1::timestamptz),
                                          ('plan_next', $1::timestamptz + $2 * interval '1 millisecond'),
                                          ('past_now', $1::timestamptz),
                                          ('past_back', $1::timestamptz - $2 * interval '1 millisecond'))
                AS t(name, target) ON t.name = s.name),
       d AS (
         SELECT m.name, coalesce(sum(e.s), 0) AS n,
                coalesce(sum(e.s * ${ms('greatest(m.at, m.target) - e.t')}), 0) AS w
           FROM m LEFT JOIN LATERAL (
             ${event('plan', 'power_windows')} UNION ALL ${event('past', 'power_off_spans')}) e ON true
          GROUP BY m.name),
       moved AS (
         UPDATE power_sums p SET at = m.target,
           c = CASE WHEN m.target >= m.at THEN m.c + d.n ELSE m.c - d.n END,
           f = CASE WHEN m.target >= m.at THEN m.f + m.c * ${ms('m.target - m.at')} + d.w
                    ELSE m.f - (m.c - d.n) * ${ms('m.at - m.target')} - d.w END
           FROM m JOIN d ON d.name = m.name
          WHERE p.name = m.name RETURNING p.name, p.f)
       SELECT (max(f) FILTER (WHERE name = 'plan_next') - max(f) FILTER (WHERE name = 'plan_now'))::float8 AS next_ms,
              (max(f) FILTER (WHERE name = 'past_now') - max(f) FILTER (WHERE name = 'past_back'))::float8 AS past_ms,
              (SELECT jsonb_object_agg(state, n) FROM power_state_counts) AS states
         FROM moved`,
      [now, days30Ms],
    );
    const r = rows[0];
    const states = { on: 0, off: 0, booting: 0, stopping: 0 };
    for (const state of Object.keys(states) as PowerState[])
      states[state] = Number(r.states[state]);
    return { states, nextMs: Math.max(0, r.next_ms), pastMs: Math.max(0, r.past_ms) };
  }

  /** Forgets off spans ended before `before` (behind both past sums: they count for neither). */
  async pruneSpans(em: EntityManager, before: Date): Promise<void> {
    await sql(
      em,
      `DELETE FROM power_off_spans
        WHERE up < $1 AND up < (SELECT min(at) FROM power_sums WHERE name IN ${STRETCHES.past.sums})`,
      [before],
    );
  }
}
