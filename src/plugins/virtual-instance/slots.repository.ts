import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { columns, sql, SqlParams } from '../../database/sql.js';
import type { Placement, SlotHost } from './pick-slots.js';
import type { Span } from '../../pools/host-usage.js';
import { hostJoin, hostsAs, lockHosts } from '../../pools/hosts.repository.js';
import { wholeHostOverlapping } from '../../pools/host-usage.js';
import { aggregateNamed, membersOfSql, notShared } from '../../pools/pools.repository.js';
import { reservationsAs } from '../../model/lease-tables.js';
import type { HostQuery } from '../../requirements/host-query.js';

export interface SlotSize {
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
}

export interface CapacityOptions {
  /** Its own slots do not count as usage (an update replaces them). */
  ownReservation?: string;
  onlyHosts?: number[];
  /** Hosts that may not take slots (hosts being emptied). */
  exclude?: number[];
  need?: { amount: number; oneHost: boolean };
  prefer?: number[];
}

/**
 * SQL of one row (`c`, `m`, `g`): the most vCPUs, MB and GB that other reservations'
 * slots (not `own`'s) use on host `host` at one instant of `w`, 0 when none. Usage only
 * rises where an allocation begins, so the instants to look at are those starts (and
 * the window's start).
 */
function peakSql(host: string, w: string, own: string): string {
  const others = `a.host_id = ${host} AND a.during && ${w} AND a.reservation_id IS DISTINCT FROM ${own}::uuid`;
  return `SELECT coalesce(max(u.c), 0) AS c, coalesce(max(u.m), 0) AS m, coalesce(max(u.g), 0) AS g
      FROM (SELECT sum(a.slots * a.vcpus) AS c, sum(a.slots * a.memory_mb) AS m,
                   sum(a.slots * a.disk_gb) AS g
              FROM (SELECT DISTINCT greatest(lower(a.during), lower(${w})) AS t
                      FROM instance_allocations a WHERE ${others}) s
              JOIN instance_allocations a ON ${others} AND a.during @> s.t
             GROUP BY s.t) u`;
}

/**
 * Instance slots over time. Capacity is exact: a host's usage only rises where an
 * allocation begins, so its peak over a window is the largest sum of overlapping
 * allocations taken at those starts (and at the window's start).
 */
@Injectable()
export class SlotsRepository {
  constructor(@Inject(CONFIG) private readonly config: Config) {}

  /**
   * Hosts that can take slots of `size` over `during`, in packing order, with how many
   * more slots fit. First the hosts already carrying slots in the window (few; their
   * exact peak usage is computed), then fresh hosts, taken in id order and only as many
   * as the request could need, so the search stops early on a large fleet. Hosts with a
   * whole-host allocation in the window are out.
   */
  async capacity(
    em: EntityManager,
    q: HostQuery,
    during: Span,
    size: SlotSize,
    options: CapacityOptions = {},
  ): Promise<SlotHost[]> {
    const p = new SqlParams();
    const hosts = this.capacitySql(p, q, during, size, options);
    const { rows } = await sql<SlotHost>(
      em,
      `SELECT id, used, free FROM (${hosts}) c ORDER BY cost, g, k, id`,
      p.values,
    );
    return rows;
  }

  /**
   * SQL of the hosts `capacity` returns, as (id, used, free, g, k, cost): `cost, g, k, id`
   * is the packing order: the cheapest hosts (placement_cost, HOST_WEIGHTS) first, so that
   * scarce ones stay free; among equals hosts with slots by fewest free, preferred hosts,
   * then fresh ones.
   */
  private capacitySql(
    p: SqlParams,
    q: HostQuery,
    during: Span,
    size: SlotSize,
    options: CapacityOptions,
  ): string {
    const s = this.slotSql(p, q, during, size, options);
    const used = `SELECT h.id, true AS used, f.free, 0 AS g, f.free AS k, h.placement_cost AS cost
        FROM ${hostsAs('h')} CROSS JOIN LATERAL (${peakSql('h.id', s.w, s.own)}) pk
             CROSS JOIN LATERAL (SELECT ${s.free('pk')} AS free) f
       WHERE h.id IN (SELECT a.host_id FROM instance_allocations a
                       WHERE a.during && ${s.w} AND a.reservation_id IS DISTINCT FROM ${s.own}::uuid)
         AND ${s.eligible} AND f.free >= 1`;
    const need = options.need;
    const prefer = p.bind(options.prefer ?? []);
    const minFree = p.bind(need?.oneHost ? need.amount : 1);
    // A literal, so that a prepared statement's generic plan knows it stops early.
    const limit =
      need === undefined ? '' : `LIMIT ${Math.trunc(need.amount + (options.prefer?.length ?? 0))}`;
    const others = `SELECT 1 FROM instance_allocations o WHERE o.host_id = h.id AND o.during && ${s.w}
                      AND o.reservation_id IS DISTINCT FROM ${s.own}::uuid`;
    const free = s.free(null);
    const fresh = `FROM ${hostsAs('h')} WHERE NOT EXISTS (${others}) AND ${s.eligible} AND ${free} >= ${minFree}::int`;
    // The preferred hosts (what an update already holds) apart, so that the rest can walk
    // the primary key and stop after `limit` rows.
    return `(${used})
       UNION ALL
       (SELECT h.id, false, ${free}, 1, 0, h.placement_cost ${fresh} AND h.id = ANY(${prefer}::int[]))
       UNION ALL
       (SELECT h.id, false, ${free}, 2, 0, h.placement_cost ${fresh}
           AND NOT (h.id = ANY(${prefer}::int[]))
         ORDER BY ${q.cheapestFirst === false ? '' : 'h.placement_cost, '}h.id ${limit})`;
  }

  /**
   * The pieces of SQL over a host `h` that capacity and its recheck share: the window
   * `w`, the reservation whose slots do not count `own`, whether `h` may take slots,
   * and how many of `size` fit on it beside a usage peak (`c`, `m`, `g` of `peak`).
   */
  private slotSql(
    p: SqlParams,
    q: HostQuery,
    during: Span,
    size: SlotSize,
    options: Pick<CapacityOptions, 'ownReservation' | 'onlyHosts' | 'exclude'>,
  ): { w: string; own: string; eligible: string; free: (peak: string | null) => string } {
    const where = p.embed(q.where, q.params);
    const w = `tstzrange(${p.bind(during.start)}::timestamptz, ${p.bind(during.end)}::timestamptz, '[)')`;
    const own = p.bind(options.ownReservation ?? null);
    const conditions = [
      'h.reservable',
      notShared('h'),
      `NOT EXISTS (${wholeHostOverlapping('x', 'h.id', w)})`,
      `(${where})`,
    ];
    if (options.onlyHosts !== undefined) {
      conditions.push(`h.id = ANY(${p.bind(options.onlyHosts)}::int[])`);
    }
    if (options.exclude !== undefined && options.exclude.length > 0) {
      conditions.push(`NOT (h.id = ANY(${p.bind(options.exclude)}::int[]))`);
    }
    const [v, m, d] = [p.bind(size.vcpus), p.bind(size.memory_mb), p.bind(size.disk_gb)];
    const [cr, rr, dr] = [
      p.bind(this.config.cpuAllocationRatio),
      p.bind(this.config.ramAllocationRatio),
      p.bind(this.config.diskAllocationRatio),
    ];
    const free = (peak: string | null) => {
      const minus = (column: string) => (peak === null ? '' : ` - ${peak}.${column}`);
      return `floor(least((h.vcpus * ${cr}::float8${minus('c')}) / ${v}::int,
                   (h.memory_mb * ${rr}::float8${minus('m')}) / ${m}::int,
                   CASE WHEN ${d}::int = 0 THEN 'Infinity'::float8
                        ELSE (h.local_gb * ${dr}::float8${minus('g')}) / ${d}::int END))::int`;
    };
    return { w, own, eligible: conditions.join('\n AND '), free };
  }

  /**
   * A new reservation's slots in one statement: the hosts `capacity` finds, packed as
   * `pickSlots` packs them (its SQL twin), and locked. Null when they do not fit.
   */
  async placeNew(
    tx: EntityManager,
    q: HostQuery,
    during: Span,
    size: SlotSize & { amount: number; affinity: boolean | null },
    reservationId: string,
  ): Promise<Placement | null> {
    const p = new SqlParams();
    const hosts = this.capacitySql(p, q, during, size, {
      ownReservation: reservationId,
      need: { amount: size.amount, oneHost: size.affinity === true },
    });
    const n = `${p.bind(size.amount)}::int`;
    const placed =
      size.affinity === true
        ? `SELECT id, ${n} AS take FROM c WHERE free >= ${n} ORDER BY cost, g, k, id LIMIT 1`
        : `SELECT id, least(cap, ${n} - coalesce(sum(cap) OVER (ORDER BY cost, g, k, id
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))::int AS take
             FROM (SELECT id, g, k, cost, ${size.affinity === false ? 'least(free, 1)' : 'free'} AS cap FROM c) x`;
    const { rows } = await sql<{ id: number; take: number }>(
      tx,
      `WITH c AS (${hosts}),
            placed AS (SELECT id, take FROM (${placed}) y WHERE take > 0)
       SELECT h.id, pl.take FROM ${hostsAs('h')} JOIN placed pl ON pl.id = h.id
        WHERE (SELECT sum(take) FROM placed) = ${n}
        ORDER BY h.id FOR UPDATE OF h`,
      p.values,
      { prepare: true },
    );
    return rows.length === 0 ? null : new Map(rows.map((r) => [r.id, r.take]));
  }

  /**
   * SQL (for the create's statement, after `placeNew`'s locks) of the hosts of
   * `placement` that no longer have room for their slots, or NULL when all do.
   */
  recheckSql(
    p: SqlParams,
    q: HostQuery,
    during: Span,
    size: SlotSize,
    reservationId: string,
    placement: Placement,
  ): string {
    const s = this.slotSql(p, q, during, size, { ownReservation: reservationId });
    const ids = p.bind([...placement.keys()]);
    const takes = p.bind([...placement.values()]);
    // LIMIT: a literal count, so that a generic plan does not guess ten hosts.
    return `SELECT array_agg(x.host)
        FROM (SELECT * FROM unnest(${ids}::int[], ${takes}::int[]) LIMIT ${placement.size}) AS x(host, take)
       WHERE NOT EXISTS (
               SELECT 1 FROM ${hostsAs('h')} CROSS JOIN LATERAL (${peakSql('h.id', s.w, s.own)}) pk
                WHERE h.id = x.host AND ${s.eligible} AND ${s.free('pk')} >= x.take)`;
  }

  /** SQL that writes a new reservation's slots, if `go`. */
  addSql(
    p: SqlParams,
    reservationId: string,
    placement: Placement,
    size: SlotSize,
    during: Span,
    go: string,
  ): string {
    return `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
       SELECT uuid7(), ${p.bind(reservationId)}::uuid, x.host, x.slots, ${p.bind(size.vcpus)}::int,
              ${p.bind(size.memory_mb)}::int, ${p.bind(size.disk_gb)}::int,
              tstzrange(${p.bind(during.start)}::timestamptz, ${p.bind(during.end)}::timestamptz, '[)')
         FROM unnest(${p.bind([...placement.keys()])}::int[], ${p.bind([...placement.values()])}::int[]) AS x(host, slots)
        WHERE ${go}`;
  }

  /**
   * Picks hosts from one capacity query, locks them, and checks them again with a fresh
   * statement: any transaction adding slots there held those locks until it committed,
   * so the check sees it. A host that filled up meanwhile means another round. Returns
   * null when `pick` finds no placement.
   */
  async placeLocked(
    tx: EntityManager,
    q: HostQuery,
    during: Span,
    size: SlotSize,
    options: CapacityOptions,
    pick: (hosts: SlotHost[]) => Placement | null,
  ): Promise<Placement | null> {
    for (let round = 0; round < 5; round++) {
      const placement = pick(await this.capacity(tx, q, during, size, options));
      if (placement === null) return null;
      const ids = [...placement.keys()].sort((a, b) => a - b);
      await lockHosts(tx, ids);
      const now = await this.capacity(tx, q, during, size, {
        ownReservation: options.ownReservation,
        exclude: options.exclude,
        onlyHosts: ids,
      });
      const fits = ids.every(
        (id) => (now.find((h) => h.id === id)?.free ?? 0) >= (placement.get(id) ?? 0),
      );
      if (fits) return placement;
    }
    return null;
  }

  async hostNames(em: EntityManager, reservationId: string): Promise<string[]> {
    const { rows } = await sql<{ name: string }>(
      em,
      `SELECT h.hypervisor_hostname AS name FROM instance_allocations a ${hostJoin('h', 'a.host_id')}
        WHERE a.reservation_id = $1 ORDER BY h.id`,
      [reservationId],
    );
    return rows.map((r) => r.name);
  }

  async placement(em: EntityManager, reservationId: string): Promise<Map<number, number>> {
    const { rows } = await sql<{ host_id: number; slots: number }>(
      em,
      `SELECT host_id, slots FROM instance_allocations WHERE reservation_id = $1 ORDER BY host_id`,
      [reservationId],
    );
    return new Map(rows.map((r) => [r.host_id, r.slots]));
  }

  /** Replaces the reservation's slots with `placement`. */
  async store(
    tx: EntityManager,
    reservationId: string,
    placement: Map<number, number>,
    size: SlotSize,
    during: Span,
  ): Promise<void> {
    await this.release(tx, reservationId);
    await this.add(tx, reservationId, placement, size, during);
  }

  /** Adds `placement`'s slots; a host the reservation holds already takes them on. */
  async add(
    tx: EntityManager,
    reservationId: string,
    placement: Placement,
    size: SlotSize,
    during: Span,
  ): Promise<void> {
    if (placement.size === 0) return;
    await sql(
      tx,
      `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
       SELECT uuid7(), $1, p.host, p.slots, $4, $5, $6, tstzrange($7, $8, '[)')
         FROM unnest($2::int[], $3::int[]) AS p(host, slots)
       ON CONFLICT (reservation_id, host_id)
       DO UPDATE SET slots = instance_allocations.slots + EXCLUDED.slots`,
      [
        reservationId,
        [...placement.keys()],
        [...placement.values()],
        size.vcpus,
        size.memory_mb,
        size.disk_gb,
        during.start,
        during.end,
      ],
    );
  }

  async release(tx: EntityManager, reservationId: string): Promise<void> {
    await sql(tx, `DELETE FROM instance_allocations WHERE reservation_id = $1`, [reservationId], {
      prepare: true,
    });
  }

  /**
   * Active instance reservations whose aggregate, as last confirmed by the compute
   * service, differs from the hosts their slots are on: an earlier resync failed.
   */
  async outOfLine(em: EntityManager, resourceType = 'virtual:instance'): Promise<string[]> {
    const { rows } = await sql<{ id: string }>(
      em,
      `SELECT r.id FROM ${reservationsAs('r')} ${aggregateNamed('ag', 'r.id::text')}
        WHERE r.status = 'active' AND r.resource_type = $1
          AND EXISTS ((${membersOfSql('ag.id')}
                       EXCEPT SELECT host_id FROM instance_allocations WHERE reservation_id = r.id)
                      UNION ALL
                      (SELECT host_id FROM instance_allocations WHERE reservation_id = r.id
                       EXCEPT ${membersOfSql('ag.id')}))`,
      [resourceType],
    );
    return rows.map((r) => r.id);
  }
}

const SLOT_ROW = [
  'id',
  'reservation_id',
  'host_id',
  'slots',
  'vcpus',
  'memory_mb',
  'disk_gb',
] as const;

/** The Blazar importer's slots, one row per host, ids kept. */
export async function insertSlotRows(
  tx: EntityManager,
  rows: Record<(typeof SLOT_ROW)[number] | 'start' | 'end', unknown>[],
): Promise<void> {
  await sql(
    tx,
    `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
       SELECT x.id, x.r, x.h, x.s, x.c, x.m, x.g, tstzrange(x.lo, x.up, '[)')
         FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[],
                     $8::timestamptz[], $9::timestamptz[]) AS x(id, r, h, s, c, m, g, lo, up)`,
    columns(rows, [...SLOT_ROW, 'start', 'end']),
  );
}
