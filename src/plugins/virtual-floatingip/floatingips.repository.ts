import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../../common/ids.js';
import { sql, type SqlParams } from '../../database/sql.js';
import { leaseJoin, reservationJoin } from '../../model/lease-tables.js';
import type { Span } from '../../pools/host-usage.js';

/** A registered address, as stored. */
export interface FloatingIpRow {
  id: string;
  floating_network_id: string;
  subnet_id: string | null;
  floating_ip_address: string;
  reservable: boolean;
  created_at: Date;
  updated_at: Date | null;
}

/** A registered address as an import writes it (times as ISO text). */
export interface KeptFloatingIp {
  id: string;
  floating_network_id: string;
  subnet_id: string | null;
  floating_ip_address: string;
  reservable: boolean;
  created_at: string;
  updated_at: string | null;
}

/** An allocation as an import writes it: `start`/`end` include the cleaning time. */
export interface KeptAllocation {
  id: string;
  reservation_id: string;
  floatingip_id: string;
  start: string;
  end: string;
}

/** An address a pick chose. */
export interface Picked {
  id: string;
  address: string;
}

const COLUMNS = `id, floating_network_id, subnet_id, host(floating_ip_address) AS floating_ip_address,
                 reservable, created_at, updated_at`;

const range = (p: SqlParams, during: Span) =>
  `tstzrange(${p.bind(during.start)}::timestamptz, ${p.bind(during.end)}::timestamptz, '[)')`;

/**
 * The owner of `floatingips` and `floatingip_allocations`. The exclusion constraint on
 * the allocations is the last word on overlap; picks lock the addresses they choose.
 */
@Injectable()
export class FloatingIpsRepository {
  async list(em: EntityManager): Promise<FloatingIpRow[]> {
    const { rows } = await sql<FloatingIpRow>(
      em,
      `SELECT ${COLUMNS} FROM floatingips ORDER BY floating_network_id, floating_ip_address`,
    );
    return rows;
  }

  async get(em: EntityManager, id: string): Promise<FloatingIpRow | null> {
    const { rows } = await sql<FloatingIpRow>(
      em,
      `SELECT ${COLUMNS} FROM floatingips WHERE id = $1::uuid`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** The new row, or null when the address is registered on that network already. */
  async insert(
    em: EntityManager,
    row: { networkId: string; subnetId: string | null; address: string; now: Date },
  ): Promise<FloatingIpRow | null> {
    const { rows } = await sql<FloatingIpRow>(
      em,
      `INSERT INTO floatingips (id, floating_network_id, subnet_id, floating_ip_address, created_at)
       VALUES ($1, $2, $3, $4::inet, $5)
       ON CONFLICT (floating_network_id, floating_ip_address) DO NOTHING
       RETURNING ${COLUMNS}`,
      [newId(row.now.getTime()), row.networkId, row.subnetId, row.address, row.now],
    );
    return rows[0] ?? null;
  }

  /**
   * Deletes the address unless an allocation refers to it ('busy' then): allocations
   * exist only for reservations not yet ended (current or future), and an ended
   * lease's end needs the address to take it back from Neutron.
   */
  async delete(tx: EntityManager, id: string): Promise<'deleted' | 'busy' | 'none'> {
    const { rows } = await sql<{ id: string }>(
      tx,
      `SELECT id FROM floatingips WHERE id = $1::uuid FOR UPDATE`,
      [id],
    );
    if (rows.length === 0) return 'none';
    const busy = await sql(
      tx,
      `SELECT 1 FROM floatingip_allocations WHERE floatingip_id = $1 LIMIT 1`,
      [id],
    );
    if (busy.rows.length > 0) return 'busy';
    await sql(tx, `DELETE FROM floatingips WHERE id = $1`, [id]);
    return 'deleted';
  }

  /** Of `addresses`, those not registered as reservable on the network. */
  async unknown(em: EntityManager, networkId: string, addresses: string[]): Promise<string[]> {
    if (addresses.length === 0) return [];
    const { rows } = await sql<{ a: string }>(
      em,
      `SELECT a FROM unnest($2::text[]) a
        WHERE NOT EXISTS (SELECT 1 FROM floatingips f WHERE f.floating_network_id = $1
                            AND f.reservable AND f.floating_ip_address = a::inet)`,
      [networkId, addresses],
    );
    return rows.map((r) => r.a);
  }

  /**
   * Up to `count` reservable addresses of the network free over `during` (but for the
   * reservation's own), `only` among those if given, locked for this transaction.
   * Rows another transaction is choosing are skipped first; if that leaves too few, a
   * second pass waits for them.
   */
  async pick(
    tx: EntityManager,
    q: {
      networkId: string;
      during: Span;
      count: number;
      only?: string[];
      exclude?: string[];
      own?: string;
    },
  ): Promise<Picked[]> {
    const params = [
      q.networkId,
      q.during.start,
      q.during.end,
      q.exclude ?? [],
      q.own ?? null,
      q.only ?? null,
    ];
    const limit = String(Math.max(0, Math.trunc(q.count)));
    const base = `SELECT f.id, host(f.floating_ip_address) AS address FROM floatingips f
      WHERE f.floating_network_id = $1 AND f.reservable
        AND NOT (f.id = ANY($4::uuid[]))
        AND ($6::inet[] IS NULL OR f.floating_ip_address = ANY($6::inet[]))
        AND NOT EXISTS (SELECT 1 FROM floatingip_allocations a WHERE a.floatingip_id = f.id
                          AND a.during && tstzrange($2, $3, '[)')
                          AND a.reservation_id IS DISTINCT FROM $5::uuid)
      ORDER BY f.floating_ip_address LIMIT ${limit} FOR UPDATE OF f`;
    const skipped = await sql<Picked>(tx, `${base} SKIP LOCKED`, params, { prepare: true });
    if (skipped.rows.length >= q.count) return skipped.rows;
    return (await sql<Picked>(tx, base, params, { prepare: true })).rows;
  }

  /** The allocations' insert, written only if `go` holds (a CTE of the create). */
  insertSql(p: SqlParams, reservationId: string, ids: string[], during: Span, go: string): string {
    return `INSERT INTO floatingip_allocations (id, reservation_id, floatingip_id, during)
            SELECT uuid7(), ${p.bind(reservationId)}::uuid, f, ${range(p, during)}
              FROM unnest(${p.bind(ids)}::uuid[]) f WHERE ${go}`;
  }

  /**
   * NULL while none of `ids` has another reservation's allocation over `during`, else
   * those that do (committed after the pick's snapshot).
   */
  takenSql(p: SqlParams, reservationId: string, ids: string[], during: Span): string {
    return `SELECT array_agg(DISTINCT a.floatingip_id::text) FROM floatingip_allocations a
             WHERE a.floatingip_id = ANY(${p.bind(ids)}::uuid[]) AND a.during && ${range(p, during)}
               AND a.reservation_id <> ${p.bind(reservationId)}::uuid`;
  }

  async allocate(tx: EntityManager, reservationId: string, ids: string[], during: Span) {
    if (ids.length === 0) return;
    await sql(
      tx,
      `INSERT INTO floatingip_allocations (id, reservation_id, floatingip_id, during)
       SELECT uuid7(), $1, f, tstzrange($3, $4, '[)') FROM unnest($2::uuid[]) f`,
      [reservationId, ids, during.start, during.end],
    );
  }

  /** The reservation's addresses' ids, locked, in address order. */
  async held(tx: EntityManager, reservationId: string): Promise<string[]> {
    const { rows } = await sql<{ id: string }>(
      tx,
      `SELECT f.id FROM floatingips f
        WHERE f.id IN (SELECT floatingip_id FROM floatingip_allocations WHERE reservation_id = $1)
        ORDER BY f.floating_ip_address FOR UPDATE OF f`,
      [reservationId],
    );
    return rows.map((r) => r.id);
  }

  /** Of `ids`, those no other reservation holds over `during`, in address order. */
  async freeAmong(tx: EntityManager, ids: string[], during: Span, own: string): Promise<Picked[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<Picked>(
      tx,
      `SELECT f.id, host(f.floating_ip_address) AS address FROM floatingips f
        WHERE f.id = ANY($1::uuid[]) AND f.reservable
          AND NOT EXISTS (SELECT 1 FROM floatingip_allocations a WHERE a.floatingip_id = f.id
                            AND a.during && tstzrange($2, $3, '[)') AND a.reservation_id <> $4)
        ORDER BY f.floating_ip_address`,
      [ids, during.start, during.end, own],
    );
    return rows;
  }

  /** Keeps `keep` (moved to the new window) and drops the reservation's other addresses. */
  async reshape(tx: EntityManager, reservationId: string, keep: string[], during: Span) {
    await sql(
      tx,
      `DELETE FROM floatingip_allocations WHERE reservation_id = $1 AND NOT (floatingip_id = ANY($2::uuid[]))`,
      [reservationId, keep],
    );
    await sql(
      tx,
      `UPDATE floatingip_allocations SET during = tstzrange($2, $3, '[)')
        WHERE reservation_id = $1 AND during <> tstzrange($2, $3, '[)')`,
      [reservationId, during.start, during.end],
    );
  }

  /** Registered addresses kept with their ids and times (an import from Blazar). */
  async insertKept(em: EntityManager, rows: KeptFloatingIp[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <K extends keyof KeptFloatingIp>(k: K) => rows.map((r) => r[k]);
    await sql(
      em,
      `INSERT INTO floatingips (id, floating_network_id, subnet_id, floating_ip_address, reservable,
                                created_at, updated_at)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::inet[], $5::bool[],
                            $6::timestamptz[], $7::timestamptz[])`,
      [
        col('id'),
        col('floating_network_id'),
        col('subnet_id'),
        col('floating_ip_address'),
        col('reservable'),
        col('created_at'),
        col('updated_at'),
      ],
    );
  }

  /** Allocations kept with their ids (an import from Blazar); the constraint still applies. */
  async allocateKept(em: EntityManager, rows: KeptAllocation[]): Promise<void> {
    if (rows.length === 0) return;
    await sql(
      em,
      `INSERT INTO floatingip_allocations (id, reservation_id, floatingip_id, during)
       SELECT x.id, x.r, x.f, tstzrange(x.lo, x.up, '[)')
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[], $5::timestamptz[])
           AS x(id, r, f, lo, up)`,
      [
        rows.map((r) => r.id),
        rows.map((r) => r.reservation_id),
        rows.map((r) => r.floatingip_id),
        rows.map((r) => r.start),
        rows.map((r) => r.end),
      ],
    );
  }

  /** Every allocation, with its address and lease (what an import checks against). */
  async allAllocations(em: EntityManager): Promise<(KeptAllocation & { lease: string })[]> {
    const { rows } = await sql<KeptAllocation & { lo: Date; up: Date; lease: string }>(
      em,
      `SELECT a.id, a.reservation_id, a.floatingip_id, lower(a.during) AS lo, upper(a.during) AS up,
              'lease ' || l.name || ' (' || l.id || ')' AS lease
         FROM floatingip_allocations a ${reservationJoin('r', 'a.reservation_id')}
         ${leaseJoin('l', 'r')}`,
    );
    return rows.map(({ lo, up, ...r }) => ({
      ...r,
      start: lo.toISOString(),
      end: up.toISOString(),
    }));
  }

  async release(tx: EntityManager, reservationId: string): Promise<void> {
    await sql(tx, `DELETE FROM floatingip_allocations WHERE reservation_id = $1`, [reservationId]);
  }

  /** The registered addresses each reservation holds, in address order. */
  async heldBy(
    em: EntityManager,
    reservationIds: string[],
  ): Promise<(FloatingIpRow & { reservation_id: string })[]> {
    const { rows } = await sql<FloatingIpRow & { reservation_id: string }>(
      em,
      `SELECT a.reservation_id, f.id, f.floating_network_id, f.subnet_id,
              host(f.floating_ip_address) AS floating_ip_address, f.reservable, f.created_at, f.updated_at
         FROM floatingip_allocations a JOIN floatingips f ON f.id = a.floatingip_id
        WHERE a.reservation_id = ANY($1::uuid[])
        ORDER BY a.reservation_id, f.floating_ip_address`,
      [reservationIds],
    );
    return rows;
  }

  /** The addresses each reservation holds, with their network's subnet, in address order. */
  async addresses(
    em: EntityManager,
    reservationIds: string[],
  ): Promise<{ reservation_id: string; address: string; subnet_id: string | null }[]> {
    const { rows } = await sql<{
      reservation_id: string;
      address: string;
      subnet_id: string | null;
    }>(
      em,
      `SELECT a.reservation_id, host(f.floating_ip_address) AS address, f.subnet_id
         FROM floatingip_allocations a JOIN floatingips f ON f.id = a.floatingip_id
        WHERE a.reservation_id = ANY($1::uuid[])
        ORDER BY a.reservation_id, f.floating_ip_address`,
      [reservationIds],
    );
    return rows;
  }
}
