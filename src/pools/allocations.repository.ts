import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import type { HostQuery } from '../requirements/host-query.js';
import { bind, busy, eligible } from './allocation-sql.js';
import { LATEST_DATE } from '../common/dates.js';

/** Room after the latest date for the cleaning time (at most a week) of a lease ending then. */
const SEARCH_HORIZON = LATEST_DATE.getTime() + 366 * 86_400_000;

export interface Span {
  start: Date;
  end: Date;
}

/** What a reservation occupies: its lease's window plus the cleaning time after it. */
export function occupied(window: Span, cleaningMinutes: number): Span {
  return { start: window.start, end: new Date(window.end.getTime() + cleaningMinutes * 60_000) };
}

/**
 * What occupies hosts: whole-host allocations and instance slots, as
 * (reservation_id, host_id, during). A host with slots cannot be reserved whole.
 */
export const HOST_USAGE = `(SELECT reservation_id, host_id, during FROM host_allocations
   UNION ALL SELECT reservation_id, host_id, during FROM instance_allocations)`;

/** Locks host rows in id order (one order everywhere, so lockers never deadlock). */
export async function lockHosts(tx: EntityManager, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await sql(tx, `SELECT id FROM hosts WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids]);
}

/**
 * Host allocations, with set-based SQL throughout: candidates are found by one query
 * over hosts with an index probe into host_allocations, never by a loop over hosts.
 * The exclusion constraint on host_allocations is the last word on overlap.
 */
@Injectable()
export class AllocationsRepository {
  /**
   * Up to `max` hosts free over `during` (other reservations' allocations only), locked
   * for this transaction. Rows another transaction is choosing right now are skipped, so
   * concurrent creates pick different hosts; when that leaves too few, a second pass
   * waits for those transactions instead of refusing early.
   */
  async findFree(
    tx: EntityManager,
    q: HostQuery,
    during: Span,
    count: { min: number; max: number },
    options: { ownReservation?: string; exclude?: number[] } = {},
  ): Promise<number[]> {
    let exclude = options.exclude ?? [];
    for (let round = 0; ; round++) {
      const ids = await this.pick(tx, q, during, count, { ...options, exclude });
      // Slots committed after this statement's snapshot but before our lock: a slot
      // reservation holds the host row lock until it commits, so a fresh statement now
      // sees them all.
      const { rows } = await sql<{ host_id: number }>(
        tx,
        `SELECT DISTINCT host_id FROM instance_allocations
          WHERE host_id = ANY($1) AND during && tstzrange($2, $3, '[)')`,
        [ids, during.start, during.end],
      );
      if (rows.length === 0 || round >= 3)
        return ids.filter((id) => !rows.some((r) => r.host_id === id));
      exclude = [...exclude, ...rows.map((r) => r.host_id)];
    }
  }

  /**
   * Up to `count.max` hosts free over `during`, locked, as `findFree` picks them, without
   * its look for slots committed meanwhile (the caller's to make, after the locks).
   */
  async pick(
    tx: EntityManager,
    q: HostQuery,
    during: Span,
    count: { min: number; max: number },
    options: { ownReservation?: string; exclude?: number[] },
  ): Promise<number[]> {
    const params = [...q.params];
    const range = `tstzrange(${bind(params, during.start)}, ${bind(params, during.end)}, '[)')`;
    const own = bind(params, options.ownReservation ?? null);
    const exclude = bind(params, options.exclude ?? []);
    const base = `FROM hosts h
      WHERE ${eligible(q)}
        AND NOT (h.id = ANY(${exclude}::int[]))
        AND NOT EXISTS (SELECT 1 FROM host_allocations a WHERE a.host_id = h.id
                          AND a.during && ${range}
                          AND a.reservation_id IS DISTINCT FROM ${own}::uuid)
        AND NOT EXISTS (SELECT 1 FROM instance_allocations ia WHERE ia.host_id = h.id
                          AND ia.during && ${range})`;
    if (q.affinity || q.antiAffinity) {
      return this.findPlaced(tx, q, base, params, count);
    }
    // A literal, so that the generic plan of the prepared statement knows it stops early.
    const limit = String(Math.max(0, Math.trunc(count.max)));
    const picked = await sql<{ id: number }>(
      tx,
      `SELECT h.id ${base} ORDER BY h.id LIMIT ${limit} FOR UPDATE OF h SKIP LOCKED`,
      params,
      { prepare: true },
    );
    let ids = picked.rows.map((r) => r.id);
    if (ids.length < count.min) {
      const waited = await sql<{ id: number }>(
        tx,
        `SELECT h.id ${base} ORDER BY h.id LIMIT ${limit} FOR UPDATE OF h`,
        params,
        { prepare: true },
      );
      ids = waited.rows.map((r) => r.id);
    }
    return ids;
  }

  /** Topology placement: all under one label of a level, or at most one per label. */
  private async findPlaced(
    tx: EntityManager,
    q: HostQuery,
    base: string,
    params: unknown[],
    count: { min: number; max: number },
  ): Promise<number[]> {
    const level = bind(params, q.affinity ?? q.antiAffinity);
    const max = bind(params, count.max);
    const free = `SELECT h.id, h.capabilities ->> ${level}::text AS label ${base} AND h.capabilities ? ${level}::text`;
    const query = q.affinity
      ? `WITH free AS (${free}),
              best AS (SELECT label FROM free GROUP BY label HAVING count(*) >= ${bind(params, count.min)}::int
                        ORDER BY count(*) DESC, label LIMIT 1)
         SELECT id FROM free WHERE label = (SELECT label FROM best) ORDER BY id LIMIT ${max}::int`
      : `WITH free AS (${free}),
              one AS (SELECT DISTINCT ON (label) id FROM free ORDER BY label, id)
         SELECT id FROM one ORDER BY id LIMIT ${max}::int`;
    const { rows } = await sql<{ id: number }>(tx, query, params);
    const ids = rows.map((r) => r.id);
    await lockHosts(tx, ids);
    return ids;
  }

  async insert(
    tx: EntityManager,
    reservationId: string,
    hostIds: number[],
    during: Span,
  ): Promise<void> {
    if (hostIds.length === 0) return;
    await sql(
      tx,
      `INSERT INTO host_allocations (id, reservation_id, host_id, during)
       SELECT uuid7(), $1, h, tstzrange($3, $4, '[)') FROM unnest($2::int[]) h`,
      [reservationId, hostIds, during.start, during.end],
    );
  }

  async hostsOf(em: EntityManager, reservationId: string): Promise<number[]> {
    const { rows } = await sql<{ host_id: number }>(
      em,
      `SELECT host_id FROM host_allocations WHERE reservation_id = $1 ORDER BY host_id`,
      [reservationId],
    );
    return rows.map((r) => r.host_id);
  }

  /** Of the reservation's hosts, those that match `q` and are free over `during`. */
  async stillFitting(
    tx: EntityManager,
    reservationId: string,
    q: HostQuery,
    during: Span,
  ): Promise<number[]> {
    const params = [...q.params];
    const own = bind(params, reservationId);
    const range = `tstzrange(${bind(params, during.start)}, ${bind(params, during.end)}, '[)')`;
    const { rows } = await sql<{ id: number }>(
      tx,
      `SELECT h.id FROM hosts h
        WHERE h.id IN (SELECT host_id FROM host_allocations WHERE reservation_id = ${own}::uuid)
          AND ${eligible(q)}
          AND NOT EXISTS (SELECT 1 FROM host_allocations a WHERE a.host_id = h.id
                            AND a.during && ${range} AND a.reservation_id <> ${own}::uuid)
        ORDER BY h.id FOR UPDATE OF h`,
      params,
    );
    return rows.map((r) => r.id);
  }

  /** Keeps `keep` (moved to the new window) and drops the reservation's other hosts. */
  async reshape(
    tx: EntityManager,
    reservationId: string,
    keep: number[],
    during: Span,
  ): Promise<void> {
    await sql(
      tx,
      `DELETE FROM host_allocations WHERE reservation_id = $1 AND NOT (host_id = ANY($2::int[]))`,
      [reservationId, keep],
    );
    await sql(
      tx,
      `UPDATE host_allocations SET during = tstzrange($2, $3, '[)')
        WHERE reservation_id = $1 AND during <> tstzrange($2, $3, '[)')`,
      [reservationId, during.start, during.end],
    );
  }

  async release(tx: EntityManager, reservationId: string): Promise<void> {
    await sql(tx, `DELETE FROM host_allocations WHERE reservation_id = $1`, [reservationId]);
  }

  /**
   * Earliest starts, from `from` on, at which `count` matching hosts are all free for
   * `durationMs`: the candidates are `from` and every allocation end after it. Time is
   * searched in chunks, nearest first, each twice as long as the last, so the cost
   * follows the allocations near the answer, not all those after `from`.
   */
  async earliestStarts(
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
      const next = await this.nextEnd(em, t1);
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
            busy AS MATERIALIZED (SELECT n.host_id, n.during FROM near n JOIN hosts h ON h.id = n.host_id
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
            total AS (SELECT count(*)::int AS n FROM hosts h WHERE ${eligible(q)}),
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

  /** The first allocation end at or after `t`, of any host, or null when there is none. */
  private async nextEnd(em: EntityManager, t: Date): Promise<Date | null> {
    const { rows } = await sql<{ t: Date | null }>(
      em,
      `SELECT least((SELECT min(upper(during)) FROM host_allocations WHERE upper(during) >= $1),
                    (SELECT min(upper(during)) FROM instance_allocations WHERE upper(during) >= $1)) AS t`,
      [t],
    );
    return rows[0].t;
  }
}
