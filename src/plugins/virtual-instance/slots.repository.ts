import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { sql } from '../../database/sql.js';
import type { Placement, SlotHost } from './pick-slots.js';
import { lockHosts, type Span } from '../../pools/allocations.repository.js';
import type { HostQuery } from '../../scheduler/host-query.js';

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

function bind(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
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
    const p = [...q.params];
    const w = `tstzrange(${bind(p, during.start)}::timestamptz, ${bind(p, during.end)}::timestamptz, '[)')`;
    const own = bind(p, options.ownReservation ?? null);
    const only = bind(p, options.onlyHosts ?? null);
    const exclude = bind(p, options.exclude ?? []);
    const [v, m, d] = [bind(p, size.vcpus), bind(p, size.memory_mb), bind(p, size.disk_gb)];
    const [cr, rr, dr] = [
      bind(p, this.config.cpuAllocationRatio),
      bind(p, this.config.ramAllocationRatio),
      bind(p, this.config.diskAllocationRatio),
    ];
    const others = `SELECT 1 FROM instance_allocations o WHERE o.host_id = h.id AND o.during && ${w}
                      AND o.reservation_id IS DISTINCT FROM ${own}::uuid`;
    const eligible = `h.reservable
            AND NOT EXISTS (SELECT 1 FROM aggregate_hosts sp WHERE sp.host_id = h.id AND sp.kind = 'shared')
            AND (${only}::int[] IS NULL OR h.id = ANY(${only}::int[]))
            AND NOT (h.id = ANY(${exclude}::int[]))
            AND NOT EXISTS (SELECT 1 FROM host_allocations x WHERE x.host_id = h.id AND x.during && ${w})
            AND (${q.where})`;
    const slotsOf = (cpu: string, ram: string, disk: string) =>
      `floor(least((${cpu}) / ${v}::int, (${ram}) / ${m}::int,
                   CASE WHEN ${d}::int = 0 THEN 'Infinity'::float8 ELSE (${disk}) / ${d}::int END))::int`;
    const used = await sql<SlotHost>(
      em,
      `WITH cand AS (
         SELECT h.id, h.vcpus * ${cr}::float8 AS cpu, h.memory_mb * ${rr}::float8 AS ram,
                h.local_gb * ${dr}::float8 AS disk
           FROM hosts h
          WHERE h.id IN (SELECT a.host_id FROM instance_allocations a
                          WHERE a.during && ${w} AND a.reservation_id IS DISTINCT FROM ${own}::uuid)
            AND ${eligible}),
       ov AS (
         SELECT a.host_id, a.during * ${w} AS d, a.slots * a.vcpus AS c, a.slots * a.memory_mb AS m,
                a.slots * a.disk_gb AS g
           FROM instance_allocations a JOIN cand ON cand.id = a.host_id
          WHERE a.during && ${w} AND a.reservation_id IS DISTINCT FROM ${own}::uuid),
       peak AS (
         SELECT host_id, max(c) AS c, max(m) AS m, max(g) AS g FROM (
           SELECT s.host_id, sum(o.c) AS c, sum(o.m) AS m, sum(o.g) AS g
             FROM (SELECT DISTINCT host_id, lower(d) AS t FROM ov) s
             JOIN ov o ON o.host_id = s.host_id AND o.d @> s.t
            GROUP BY s.host_id, s.t) u
          GROUP BY host_id),
       fit AS (
         SELECT cand.id, true AS used,
                ${slotsOf('cand.cpu - peak.c', 'cand.ram - peak.m', 'cand.disk - peak.g')} AS free
           FROM cand JOIN peak ON peak.host_id = cand.id)
       SELECT id, used, free FROM fit WHERE free >= 1 ORDER BY free, id`,
      p,
    );
    const need = options.need;
    const pf = [...p];
    const prefer = bind(pf, options.prefer ?? []);
    const minFree = bind(pf, need?.oneHost ? need.amount : 1);
    const limit = bind(pf, need === undefined ? null : need.amount + (options.prefer?.length ?? 0));
    const free = slotsOf(
      `h.vcpus * ${cr}::float8`,
      `h.memory_mb * ${rr}::float8`,
      `h.local_gb * ${dr}::float8`,
    );
    const fresh = `FROM hosts h WHERE NOT EXISTS (${others}) AND ${eligible} AND ${free} >= ${minFree}::int`;
    // The preferred hosts (what an update already holds) apart, so that the rest can walk
    // the primary key and stop after `limit` rows.
    const rows = await sql<SlotHost>(
      em,
      `(SELECT h.id, false AS used, ${free} AS free ${fresh} AND h.id = ANY(${prefer}::int[]))
       UNION ALL
       (SELECT h.id, false AS used, ${free} AS free ${fresh} AND NOT (h.id = ANY(${prefer}::int[]))
         ORDER BY h.id LIMIT ${limit}::int)`,
      pf,
    );
    return [...used.rows, ...rows.rows];
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
      `SELECT h.hypervisor_hostname AS name FROM instance_allocations a JOIN hosts h ON h.id = a.host_id
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
       SELECT gen_random_uuid(), $1, p.host, p.slots, $4, $5, $6, tstzrange($7, $8, '[)')
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
    await sql(tx, `DELETE FROM instance_allocations WHERE reservation_id = $1`, [reservationId]);
  }
}
