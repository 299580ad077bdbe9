import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { LATEST_DATE } from '../common/dates.js';
import { sql } from '../database/sql.js';
import type { HostQuery } from '../requirements/host-query.js';
import { bind, busy, eligible } from './allocation-sql.js';
import { everyHost, freeAtStarts } from './host-busy-counts.js';
import { refreshHostBusy } from './host-busy.js';
import { nextEnd } from './host-usage.js';
import { hostJoin, hostsAs } from './hosts.repository.js';

/** Room after the latest date for the cleaning time (at most a week) of a lease ending then. */
const SEARCH_HORIZON = LATEST_DATE.getTime() + 366 * 86_400_000;

/** When matching hosts are free: the availability read of allocations of every type. */
@Injectable()
export class FreeStarts {
  /**
   * Earliest starts, from `from` on, at which `count` matching hosts are all free for
   * `durationMs`: the candidates are `from` and every allocation end after it. Without
   * a requirement, the first few candidates are counted from host_busy's counts
   * (busy-counts.ts); when fewer than `limit` of them fit, or with a requirement, time
   * is searched host by host (byHost).
   */
  async earliestStarts(
    em: EntityManager,
    q: HostQuery,
    count: number,
    durationMs: number,
    from: Date,
    limit: number,
  ): Promise<{ start: Date; free: number }[]> {
    // Inside a transaction (a create's 409), the counts' refresh would hold its lock to
    // the end of it and be undone with it.
    if (everyHost(q) && em.queryRunner?.isTransactionActive !== true) {
      const found = await this.fromCounts(em, count, durationMs, from, limit);
      if (found !== null) return found;
    }
    return this.byHost(em, q, count, durationMs, from, limit);
  }

  /** The first `limit` fits when the first candidates hold them (or all); otherwise null. */
  private async fromCounts(
    em: EntityManager,
    count: number,
    durationMs: number,
    from: Date,
    limit: number,
  ): Promise<{ start: Date; free: number }[] | null> {
    const lastStart = SEARCH_HORIZON - durationMs;
    if (from.getTime() >= lastStart) return [];
    await refreshHostBusy(em);
    const counted = await freeAtStarts(em, from, durationMs, new Date(lastStart), 2 * limit + 8);
    if (counted.inPool < count) return [];
    const fits = counted.starts.filter((s) => s.free >= count);
    return fits.length >= limit || counted.all ? fits.slice(0, limit) : null;
  }

  /**
   * The earliest starts host by host. Time is searched in chunks, nearest first, each
   * twice as long as the last, so the cost follows the allocations near the answer, not
   * all those after `from`.
   */
  async byHost(
    em: EntityManager,
    q: HostQuery,
    count: number,
    durationMs: number,
    from: Date,
    limit: number,
  ): Promise<{ start: Date; free: number }[]> {
    const found: { start: Date; free: number }[] = [];
    // No window ends past the horizon, so the chunks (and their arithmetic) stop there.
    const lastStart = SEARCH_HORIZON - durationMs;
    let width = Math.max(durationMs, 3_600_000);
    for (let t0 = from; t0.getTime() < lastStart; width *= 2) {
      const t1 = new Date(Math.min(t0.getTime() + width, lastStart));
      const chunk = await this.startsIn(
        em,
        q,
        { from, t0, t1 },
        durationMs,
        count,
        limit - found.length,
      );
      if (chunk.total < count) return [];
      found.push(...chunk.starts);
      if (found.length >= limit) return found;
      const next = await nextEnd(em, t1);
      if (next === null) return found;
      t0 = next;
    }
    return found;
  }

  /**
   * The starts in [t0, t1) (`from` and the allocation ends) with at least `count` matching
   * hosts free for `durationMs`, by one sweep: a host is taken for a start t while t is in
   * (lower - duration, upper) of one of its allocations; those spans are merged per host,
   * then their bounds and the candidates are walked in time order, counting the hosts taken.
   */
  private async startsIn(
    em: EntityManager,
    q: HostQuery,
    chunk: { from: Date; t0: Date; t1: Date },
    durationMs: number,
    count: number,
    limit: number,
  ): Promise<{ total: number; starts: { start: Date; free: number }[] }> {
    const params = [...q.params];
    const from = `${bind(params, chunk.from)}::timestamptz`;
    const t0 = `${bind(params, chunk.t0)}::timestamptz`;
    const t1 = `${bind(params, chunk.t1)}::timestamptz`;
    const dur = `${bind(params, `${durationMs} milliseconds`)}::interval`;
    const need = bind(params, count);
    const lim = bind(params, limit);
    const { rows } = await sql<{ total: number; starts: Date[]; frees: number[] }>(
      em,
      `WITH near AS MATERIALIZED ${busy(`tstzrange(${t0} - interval '1 microsecond', ${t1} + ${dur}, '[)')`)},
            -- Read by time first, then joined to their hosts: a selective requirement that the
            -- planner misjudges must not turn into a probe of the allocations per host.
            busy AS MATERIALIZED (SELECT n.host_id, n.during FROM near n ${hostJoin('h', 'n.host_id')}
                                   WHERE ${eligible(q)}),
            -- Only starts at or after the first candidate count: a span begins no earlier, and
            -- (lower - duration) is never computed before it (a long one leaves the year range).
            taken AS (SELECT unnest(range_agg(tstzrange(
                               CASE WHEN lower(during) >= ${from} + ${dur} THEN lower(during) - ${dur}
                                    ELSE ${from} - interval '1 microsecond' END,
                               upper(during), '()'))) AS r
                        FROM busy GROUP BY host_id),
            candidates AS (
              SELECT DISTINCT t FROM (
                SELECT ${from} AS t WHERE ${from} >= ${t0}
                UNION ALL
                SELECT upper(during) FROM busy
                 WHERE upper(during) > ${from} AND upper(during) >= ${t0} AND upper(during) < ${t1}) c),
            -- At one instant, spans that end (0) before the candidates (1) before spans that begin (2).
            events AS (SELECT upper(r) AS t, 0 AS kind, -1 AS d FROM taken
                       UNION ALL SELECT t, 1, 0 FROM candidates
                       UNION ALL SELECT lower(r), 2, 1 FROM taken),
            swept AS (SELECT t, kind, sum(d) OVER (ORDER BY t, kind ROWS UNBOUNDED PRECEDING) AS taken
                        FROM events),
            total AS (SELECT count(*)::int AS n FROM ${hostsAs('h')} WHERE ${eligible(q)}),
            fit AS (SELECT s.t, (total.n - s.taken)::int AS free FROM swept s, total
                     WHERE s.kind = 1 AND total.n - s.taken >= ${need} ORDER BY s.t LIMIT ${lim})
       SELECT (SELECT n FROM total) AS total,
              coalesce((SELECT array_agg(t ORDER BY t) FROM fit), '{}') AS starts,
              coalesce((SELECT array_agg(free ORDER BY t) FROM fit), '{}') AS frees`,
      params,
    );
    const { total, starts, frees } = rows[0];
    return { total, starts: starts.map((start, i) => ({ start, free: Number(frees[i]) })) };
  }
}
