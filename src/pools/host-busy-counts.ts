import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import type { HostQuery } from '../requirements/host-query.js';
import { bind } from './allocation-sql.js';
import { BUCKET_ORIGIN } from './host-busy.js';
import { distinctEnds, type Span } from './host-usage.js';

/*
 * The capacity plan and the availability search over every host of the reservation pool
 * (no requirement), read from the counts of host_busy (HostBusyCounts migration) rather
 * than host by host. For a window [a, b), the in-pool hosts busy at some point of it are
 *
 *   (stretches with up > a) - (stretches with lo >= b) - (gaps with prev_end > a, lo < b)
 *
 * The first two terms are the stretches that meet the window (each ends after a and
 * begins before b); a host with k of them has k - 1 free gaps inside the window between
 * them, which the third term takes away, so each host counts once. Both counts "from x
 * on" are sums of the day rows of host_busy_counts after x; a day with a point of the
 * question strictly inside is read by hours instead, and a point inside an hour counts
 * that hour's stretches from host_busy on its shorter side (withinHour). The gaps inside
 * a window are shorter than it and are found through the host_busy_gaps index, without
 * reading the longer ones.
 *
 * So a plan reads a row per day from its start to the last booking (and the hour rows of
 * a day its points cut, and for a point inside an hour the stretches of at most half of
 * it), and the gaps shorter than its step; the availability search as much around its
 * candidate starts.
 */

/** A requirement that leaves every host in: the plan and the search read the counts. */
export function everyHost(q: HostQuery): boolean {
  return q.where === 'TRUE' && q.params.length === 0;
}

/** As the host_busy_gaps index has it: where a gap begins and how long it is, in seconds. */
const GAP_POINT = `point(extract(epoch FROM b.prev_end - ${BUCKET_ORIGIN})::float8,
                         extract(epoch FROM b.lo - b.prev_end)::float8)`;

/**
 * SQL of the host_busy_gaps box for gaps beginning in [from, to] (SQL timestamps) no
 * longer than `longest` (SQL interval). A second wider on each side: the seconds are
 * floating point, and the caller's own conditions are exact.
 */
function gapBox(from: string, to: string, longest: string): string {
  const secs = (t: string) => `extract(epoch FROM ${t} - ${BUCKET_ORIGIN})::float8`;
  return `box(point(${secs(from)} - 1, -1),
              point(${secs(to)} + 1, extract(epoch FROM ${longest})::float8 + 1))`;
}

/**
 * SQL counting the in-pool stretches whose start (`lo`) or last instant (`up`: up - 1
 * microsecond) is in [from, to), through the host_busy_lo or host_busy_up index.
 */
function stretchesIn(col: 'lo' | 'up', from: string, to: string): string {
  const bound =
    col === 'lo' ? `b.lo >= ${from} AND b.lo < ${to}` : `b.up > ${from} AND b.up <= ${to}`;
  return `(SELECT count(*) FROM host_busy b WHERE b.in_pool AND ${bound})`;
}

/**
 * What a point inside an hour (x, in the hour h) counts of that hour's stretches, of
 * `col` (starts or ends) from x on: read stretch by stretch on the shorter side of x,
 * the rest from the hour's row. On the hour, nothing: the hour rows hold it.
 */
function withinHour(col: 'starts' | 'ends'): string {
  const at = col === 'starts' ? 'lo' : 'up';
  return `CASE WHEN s.x = h.h THEN 0
               WHEN s.x - h.h <= interval '30 minutes' THEN
                 coalesce((SELECT c.${col} FROM host_busy_counts c WHERE c.grain = 'hour' AND c.t = h.h), 0)
                 - ${stretchesIn(at, 'h.h', 's.x')}
               ELSE ${stretchesIn(at, 's.x', "h.h + interval '1 hour'")} END`;
}

/**
 * CTEs that, after a CTE `points(x)`, define `counted(x, starts_from, ends_from)`: for
 * each point, the in-pool stretches with lo >= x and those with up > x (their last
 * instant, up - 1 microsecond, >= x). Bucket rows count both by the bucket of that
 * instant, so a row whose bucket no point cuts counts wholly for every point from its
 * start back; a day that a point cuts is read by hours, and a point inside an hour adds
 * what it counts of that hour (withinHour).
 */
const COUNTED = `
  cut_days AS (SELECT DISTINCT date_bin('1 day', x, ${BUCKET_ORIGIN}) AS d FROM points
                WHERE x <> date_bin('1 day', x, ${BUCKET_ORIGIN})),
  events AS (
    SELECT c.t AS k, c.starts AS s, c.ends AS e FROM host_busy_counts c
     WHERE c.grain = 'day' AND c.t >= (SELECT date_bin('1 day', min(x), ${BUCKET_ORIGIN}) FROM points)
       AND NOT EXISTS (SELECT 1 FROM cut_days d WHERE d.d = c.t)
    UNION ALL
    SELECT c.t, c.starts, c.ends FROM cut_days d
      JOIN host_busy_counts c ON c.grain = 'hour' AND c.t >= d.d AND c.t < d.d + interval '1 day'),
  -- Latest first, each point after the events at its own instant: the sums run from x on.
  swept AS (
    SELECT k AS x, kind, sum(s) OVER w AS starts_from, sum(e) OVER w AS ends_from
      FROM (SELECT k, 0 AS kind, s, e FROM events UNION ALL SELECT x, 1, 0, 0 FROM points) a
    WINDOW w AS (ORDER BY k DESC, kind ROWS UNBOUNDED PRECEDING)),
  counted AS (
    SELECT s.x, s.starts_from + ${withinHour('starts')} AS starts_from,
           s.ends_from + ${withinHour('ends')} AS ends_from
      FROM (SELECT DISTINCT x, starts_from, ends_from FROM swept WHERE kind = 1) s
     CROSS JOIN LATERAL (SELECT date_bin('1 hour', s.x, ${BUCKET_ORIGIN}) AS h) h)`;

/**
 * Runs one of the statements below, prepared. The planner cannot tell how few stretches an
 * hour holds, so it costs the statement past jit_above_cost: Climate's sessions run with
 * JIT off (database/data-source.ts), as its compilation took 1.5-2 s of a 25 ms plan at
 * 100,000 hosts.
 */
async function counted<T>(em: EntityManager, text: string, params: unknown[]): Promise<T[]> {
  return (await sql<T>(em, text, params, { prepare: true })).rows;
}

/** In-pool hosts and the others, as the last refresh left them. */
const TOTALS = `totals AS (
  SELECT coalesce(sum(hosts) FILTER (WHERE in_pool), 0)::int AS in_pool,
         coalesce(sum(hosts) FILTER (WHERE NOT in_pool), 0)::int AS out_of_pool
    FROM host_busy_totals)`;

/**
 * The capacity plan of every host (see capacity-plan.ts) from the counts: per step of
 * [start, end), the hosts in the pool, those of them busy at some point of the step,
 * and the hosts out of it. host_busy must have been refreshed.
 */
export async function planFromCounts(
  em: EntityManager,
  span: Span,
  stepMs: number,
): Promise<{ start: Date; total: number; reserved: number; outOfPool: number }[]> {
  const params: unknown[] = [];
  const start = `${bind(params, span.start)}::timestamptz`;
  const end = `${bind(params, span.end)}::timestamptz`;
  const step = `${bind(params, `${stepMs} milliseconds`)}::interval`;
  type Row = { t: Date; total: number; reserved: number; out_of_pool: number };
  const rows = await counted<Row>(
    em,
    `WITH steps AS (SELECT t FROM generate_series(${start}, ${end} - interval '1 microsecond', ${step}) t),
          points AS (SELECT t AS x FROM steps UNION SELECT ${end}),
          ${COUNTED},
          -- A gap inside a step: it begins after the step's start and ends in the same step.
          inside AS (
            SELECT date_bin(${step}, b.lo, ${start}) AS t, count(*) AS n FROM host_busy b
             WHERE b.in_pool AND b.prev_end IS NOT NULL
               AND ${GAP_POINT} <@ ${gapBox(start, end, step)}
               AND b.prev_end > ${start} AND b.lo < ${end}
               AND b.prev_end > date_bin(${step}, b.lo, ${start})
             GROUP BY 1),
          ${TOTALS}
     SELECT s.t, totals.in_pool AS total, totals.out_of_pool,
            (a.ends_from - b.starts_from - coalesce(i.n, 0))::int AS reserved
       FROM steps s
       JOIN counted a ON a.x = s.t
       JOIN counted b ON b.x = least(s.t + ${step}, ${end})
       LEFT JOIN inside i ON i.t = s.t
      CROSS JOIN totals
      ORDER BY s.t`,
    params,
  );
  return rows.map((r) => ({
    start: r.t,
    total: r.total,
    reserved: r.reserved,
    outOfPool: r.out_of_pool,
  }));
}

/** What freeAtStarts found: the candidates in time order, and whether they were all. */
export interface CountedStarts {
  inPool: number;
  starts: { start: Date; free: number }[];
  /** Every candidate before `lastStart` is among `starts`. */
  all: boolean;
}

/**
 * The availability search's first candidates (see free-starts.ts) and how many in-pool
 * hosts are free for `durationMs` from each, from the counts: `from`, then up to
 * `ends - 1` distinct allocation ends of in-pool hosts after it and before `lastStart`.
 * host_busy must have been refreshed.
 */
export async function freeAtStarts(
  em: EntityManager,
  from: Date,
  durationMs: number,
  lastStart: Date,
  ends: number,
): Promise<CountedStarts> {
  const params: unknown[] = [];
  const f = `${bind(params, from)}::timestamptz`;
  const last = `${bind(params, lastStart)}::timestamptz`;
  const dur = `${bind(params, `${durationMs} milliseconds`)}::interval`;
  const n = bind(params, ends - 1);
  const inPool = `JOIN host_busy_hosts p ON p.host_id = a.host_id AND p.in_pool`;
  type Row = { start: Date; free: number; in_pool: number; read: number };
  const rows = await counted<Row>(
    em,
    `WITH RECURSIVE later(t, n) AS (${distinctEnds('later', inPool, [f, last], n)}),
          candidates AS (SELECT ${f} AS c UNION SELECT t FROM later WHERE t IS NOT NULL),
          points AS (SELECT c AS x FROM candidates UNION SELECT c + ${dur} FROM candidates),
          ${COUNTED},
          gaps AS (
            SELECT b.prev_end, b.lo FROM host_busy b
             WHERE b.in_pool AND b.prev_end IS NOT NULL
               AND ${GAP_POINT} <@ (SELECT ${gapBox('min(c)', `max(c) + ${dur}`, dur)} FROM candidates)
               AND b.prev_end > ${f}),
          inside AS (SELECT c.c, count(g.lo) AS n FROM candidates c
                       LEFT JOIN gaps g ON g.prev_end > c.c AND g.lo < c.c + ${dur}
                      GROUP BY c.c),
          ${TOTALS}
     SELECT c.c AS start, totals.in_pool,
            (totals.in_pool - (a.ends_from - b.starts_from - i.n))::int AS free,
            (SELECT count(t) FROM later)::int AS read
       FROM candidates c
       JOIN counted a ON a.x = c.c
       JOIN counted b ON b.x = c.c + ${dur}
       JOIN inside i ON i.c = c.c
      CROSS JOIN totals
      ORDER BY c.c`,
    params,
  );
  return {
    inPool: rows[0]?.in_pool ?? 0,
    starts: rows.map((r) => ({ start: r.start, free: r.free })),
    all: (rows[0]?.read ?? 0) < ends - 1,
  };
}
