import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import type { HostQuery } from '../requirements/host-query.js';
import { bind, eligible } from './allocation-sql.js';
import { everyHost, planFromCounts } from './host-busy-counts.js';
import { refreshHostBusy } from './host-busy.js';
import type { Span } from './host-usage.js';
import { hostJoin, hostsAs } from './hosts.repository.js';

export interface PlanStep {
  start: Date;
  total: number;
  reserved: number;
  outOfPool: number;
}

/**
 * The capacity plan: per step of [start, end), how many matching hosts are in the
 * reservation pool, how many of those are reserved at some point of the step, and how
 * many matching hosts are out of the pool (shared or not reservable). Read from
 * host_busy, brought up to date first: without a requirement from its counts per day
 * (busy-counts.ts), with one host by host (planByHost).
 */
export async function capacityPlan(
  em: EntityManager,
  q: HostQuery,
  span: Span,
  stepMs: number,
): Promise<PlanStep[]> {
  await refreshHostBusy(em);
  return everyHost(q) ? planFromCounts(em, span, stepMs) : planByHost(em, q, span, stepMs);
}

/**
 * The plan host by host from host_busy (refreshed by the caller): each busy stretch
 * becomes the run of steps it touches (date_bin), less the step where the stretch before it on the host ended (the
 * only step two stretches of a host can share, as they neither overlap nor meet), so a
 * host counts once per step; then +1 where a run begins and -1 where it ends, summed along
 * the steps: linear in the stretches of the span, whatever the steps.
 */
export async function planByHost(
  em: EntityManager,
  q: HostQuery,
  span: Span,
  stepMs: number,
): Promise<PlanStep[]> {
  const params = [...q.params];
  const start = `${bind(params, span.start)}::timestamptz`;
  const end = `${bind(params, span.end)}::timestamptz`;
  const step = `${bind(params, `${stepMs} milliseconds`)}::interval`;
  type Row = { t: Date; total: number; reserved: number; out_of_pool: number };
  // Past a million rows the planner's estimate would start JIT compilation (0.85 s of a
  // 2.3 s plan at 100,000 hosts, measured on the query before host_busy): Climate's
  // sessions run with JIT off (database/data-source.ts).
  const { rows } = await sql<Row>(
    em,
    // Materialized: inlined, counts ran the pool test (a probe per host) once per FILTER
    // (6.9 ms against 2.5 at 10,000 hosts).
    `WITH matching AS MATERIALIZED (
            SELECT (${eligible({ ...q, where: 'true' })}) AS in_pool FROM ${hostsAs('h')} WHERE (${q.where})),
          counts AS (SELECT count(*) FILTER (WHERE in_pool)::int AS total,
                            count(*) FILTER (WHERE NOT in_pool)::int AS out_of_pool FROM matching),
          runs AS (
            SELECT greatest(date_bin(${step}, greatest(b.lo, ${start}), ${start}),
                            date_bin(${step}, b.prev_end - interval '1 microsecond', ${start}) + ${step}) AS b0,
                   date_bin(${step}, b.up - interval '1 microsecond', ${start}) + ${step} AS b1
              FROM host_busy b ${hostJoin('h', 'b.host_id')}
             WHERE b.lo < ${end} AND b.up > ${start} AND ${eligible(q)}),
          -- Runs with the same bounds are counted together.
          counted AS (SELECT b0, b1, count(*) AS n FROM runs WHERE b1 > b0 GROUP BY b0, b1),
          deltas AS (SELECT v.t, sum(v.d) AS d
                       FROM counted c, LATERAL (VALUES (c.b0, c.n), (c.b1, -c.n)) v(t, d)
                      GROUP BY v.t),
          steps AS (SELECT t FROM generate_series(${start}, ${end} - interval '1 microsecond', ${step}) t)
     SELECT s.t, c.total, (sum(coalesce(d.d, 0)) OVER (ORDER BY s.t))::int AS reserved, c.out_of_pool
       FROM steps s CROSS JOIN counts c LEFT JOIN deltas d ON d.t = s.t ORDER BY s.t`,
    params,
  );
  return rows.map((r) => ({
    start: r.t,
    total: r.total,
    reserved: r.reserved,
    outOfPool: r.out_of_pool,
  }));
}
