import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { columns, sql } from '../../database/sql.js';
import type { HostQuery } from '../../requirements/host-query.js';
import { bind, eligible } from '../../pools/allocation-sql.js';
import { hostsWithSlots, slotOverlapping, type Span } from '../../pools/host-usage.js';
import { hostsAs, lockHosts } from '../../pools/hosts.repository.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';

/**
 * Host allocations, with set-based SQL throughout: candidates are found by one query
 * over hosts with an index probe into host_allocations, never by a loop over hosts.
 * The exclusion constraint on host_allocations is the last word on overlap.
 */
@Injectable()
export class AllocationsRepository {
  /** Equally cheap hosts in id order, or at random (RANDOMIZE_HOST_SELECTION). */
  private readonly random: boolean;

  constructor(@Inject(CONFIG) config: Config) {
    this.random = config.randomizeHostSelection;
  }

  private tieBreak(id: string): string {
    return this.random ? 'random()' : id;
  }

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
      const slotted = await hostsWithSlots(tx, ids, during);
      if (slotted.length === 0 || round >= 3) return ids.filter((id) => !slotted.includes(id));
      exclude = [...exclude, ...slotted];
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
    const base = `FROM ${hostsAs('h')}
      WHERE ${eligible(q)}
        AND NOT (h.id = ANY(${exclude}::int[]))
        AND NOT EXISTS (SELECT 1 FROM host_allocations a WHERE a.host_id = h.id
                          AND a.during && ${range}
                          AND a.reservation_id IS DISTINCT FROM ${own}::uuid)
        AND NOT EXISTS (${slotOverlapping('ia', 'h.id', range)})`;
    if (q.affinity || q.antiAffinity) {
      return this.findPlaced(tx, q, base, params, count);
    }
    // A literal, so that the generic plan of the prepared statement knows it stops early.
    // Cheapest hosts first (placement_cost, HOST_WEIGHTS): scarce ones stay free.
    const limit = String(Math.max(0, Math.trunc(count.max)));
    const order =
      q.cheapestFirst === false
        ? this.tieBreak('h.id')
        : `h.placement_cost, ${this.tieBreak('h.id')}`;
    const picked = await sql<{ id: number }>(
      tx,
      `SELECT h.id ${base} ORDER BY ${order} LIMIT ${limit} FOR UPDATE OF h SKIP LOCKED`,
      params,
      { prepare: true },
    );
    let ids = picked.rows.map((r) => r.id);
    if (ids.length < count.min) {
      const waited = await sql<{ id: number }>(
        tx,
        `SELECT h.id ${base} ORDER BY ${order} LIMIT ${limit} FOR UPDATE OF h`,
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
    const free = `SELECT h.id, h.placement_cost AS cost, h.capabilities ->> ${level}::text AS label ${base} AND h.capabilities ? ${level}::text`;
    const query = q.affinity
      ? `WITH free AS (${free}),
              best AS (SELECT label FROM free GROUP BY label HAVING count(*) >= ${bind(params, count.min)}::int
                        ORDER BY count(*) DESC, label LIMIT 1)
         SELECT id FROM free WHERE label = (SELECT label FROM best) ORDER BY cost, ${this.tieBreak('id')} LIMIT ${max}::int`
      : `WITH free AS (${free}),
              one AS (SELECT DISTINCT ON (label) id, cost FROM free ORDER BY label, cost, ${this.tieBreak('id')})
         SELECT id FROM one ORDER BY cost, ${this.tieBreak('id')} LIMIT ${max}::int`;
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
      `SELECT h.id FROM ${hostsAs('h')}
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
    await sql(tx, `DELETE FROM host_allocations WHERE reservation_id = $1`, [reservationId], {
      prepare: true,
    });
  }
}

/** The Blazar importer's allocations, ids kept; `start`/`end` include the cleaning time. */
export async function insertHostAllocationRows(
  tx: EntityManager,
  rows: { id: string; reservation_id: string; host_id: number; start: string; end: string }[],
): Promise<void> {
  await sql(
    tx,
    `INSERT INTO host_allocations (id, reservation_id, host_id, during)
       SELECT x.id, x.r, x.h, tstzrange(x.lo, x.up, '[)')
         FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::timestamptz[], $5::timestamptz[]) AS x(id, r, h, lo, up)`,
    columns(rows, ['id', 'reservation_id', 'host_id', 'start', 'end']),
  );
}
