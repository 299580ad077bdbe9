import type { EntityManager } from 'typeorm';
import { sql, type SqlParams } from '../database/sql.js';
import type { JsonObject } from '../common/json.js';
import { hostJoin, hostsAs } from './hosts.repository.js';

/*
 * The read model of what occupies hosts (docs/development.md, "Who owns each table"): the
 * allocations of every type (physical:host's host_allocations, virtual:instance's
 * instance_allocations and claims), with their reservations and leases. On the inventory
 * floor, below the types, so that availability, capacity, healing, limits and each type
 * read the others' allocations here.
 */

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

/** (host_id, during) of the slots and whole-host allocations, slots first. */
export const OCCUPANCY = `(SELECT host_id, during FROM instance_allocations
               UNION ALL SELECT host_id, during FROM host_allocations)`;

/** SQL: whether reservation `id` holds a host that is not reservable after `now`. */
export function holdsUnreservableHost(id: string, now: string): string {
  return `EXISTS (
                 SELECT 1 FROM ${HOST_USAGE} a ${hostJoin('h', 'a.host_id')}
                  WHERE a.reservation_id = ${id} AND NOT h.reservable AND upper(a.during) > ${now})`;
}

/** SQL: a slot of `ia` on host `hostId` overlapping `range` (for NOT EXISTS). */
export function slotOverlapping(ia: string, hostId: string, range: string): string {
  return `SELECT 1 FROM instance_allocations ${ia} WHERE ${ia}.host_id = ${hostId}
                          AND ${ia}.during && ${range}`;
}

/** SQL: a whole-host allocation `x` of host `hostId` overlapping `range` (for NOT EXISTS). */
export function wholeHostOverlapping(x: string, hostId: string, range: string): string {
  return `SELECT 1 FROM host_allocations ${x} WHERE ${x}.host_id = ${hostId} AND ${x}.during && ${range}`;
}

/** SQL: (host_id) of the hosts of `ids` (an SQL int[]) with slots overlapping `range`. */
export function slotHostsSql(ids: string, range: string): string {
  return `SELECT host_id FROM instance_allocations WHERE host_id = ANY(${ids}) AND during && ${range}`;
}

/** Of `ids`, the hosts with slots over `during`, read afresh (slotHostsSql's statement twin). */
export async function hostsWithSlots(
  em: EntityManager,
  ids: number[],
  during: Span,
): Promise<number[]> {
  const { rows } = await sql<{ host_id: number }>(
    em,
    `SELECT DISTINCT host_id FROM instance_allocations
          WHERE host_id = ANY($1) AND during && tstzrange($2, $3, '[)')`,
    [ids, during.start, during.end],
  );
  return rows.map((r) => r.host_id);
}

/** The most vCPUs, MB and GB the slots on a host use at one instant from `now` on. */
export async function slotPeak(
  tx: EntityManager,
  hostId: number,
  now: Date,
): Promise<{ vcpus: number; memory: number; disk: number }> {
  const { rows } = await sql<{ vcpus: number; memory: number; disk: number }>(
    tx,
    `WITH a AS (SELECT slots * vcpus AS v, slots * memory_mb AS m, slots * disk_gb AS d, during
                    FROM instance_allocations WHERE host_id = $1 AND upper(during) > $2),
            t AS (SELECT greatest(lower(during), $2) AS at FROM a)
       SELECT coalesce(max(u.v), 0)::float AS vcpus, coalesce(max(u.m), 0)::float AS memory,
              coalesce(max(u.d), 0)::float AS disk
         FROM t CROSS JOIN LATERAL (SELECT sum(v) AS v, sum(m) AS m, sum(d) AS d
                                      FROM a WHERE a.during @> t.at) u`,
    [hostId, now],
  );
  return rows[0];
}

/** The params of the live reservations that hold a host now or later. */
export async function liveParamsOn(
  tx: EntityManager,
  hostId: number,
  now: Date,
): Promise<Record<string, unknown>[]> {
  const { rows } = await sql<{ params: Record<string, unknown> }>(
    tx,
    `SELECT DISTINCT r.params
         FROM ${HOST_USAGE} a JOIN reservations r ON r.id = a.reservation_id
        WHERE a.host_id = $1 AND upper(a.during) > $2 AND r.status IN ('pending', 'active')`,
    [hostId, now],
  );
  return rows.map((r) => r.params);
}

/**
 * What keeps hosts busy over `range` (SQL of a tstzrange): (host_id, during) of the
 * whole-host allocations and instance slots overlapping it. The one place that says how
 * long an allocation holds its host for the availability search and the capacity plan
 * (its range already ends after the cleaning time); a lead time before each start would
 * widen `during` here (and `range` by as much).
 *
 * reservation_id is read too although no caller needs it: it is in neither table's
 * (host_id, during) GiST index, so the planner cannot answer from that index alone, which
 * it costs as cheap for a time-only condition but reads nearly whole (891 buffers at
 * 100,000 allocations, 8,216 at 1,000,000, against 38 and 132 through the SP-GiST index
 * on during).
 */
export function busy(range: string): string {
  const of = (table: string) =>
    `SELECT host_id, during, reservation_id FROM ${table} WHERE during && ${range}`;
  return `(${of('host_allocations')} UNION ALL ${of('instance_allocations')})`;
}

/**
 * The first allocation end at or after `t`, of any host, or null when there is none (the
 * availability search's next chunk).
 */
export async function nextEnd(em: EntityManager, t: Date): Promise<Date | null> {
  const { rows } = await sql<{ t: Date | null }>(
    em,
    `SELECT least((SELECT min(upper(during)) FROM host_allocations WHERE upper(during) >= $1),
                    (SELECT min(upper(during)) FROM instance_allocations WHERE upper(during) >= $1)) AS t`,
    [t],
  );
  return rows[0].t;
}

/**
 * The body of a recursive CTE `name(t, n)`: the first `limit` distinct ends (SQL) of
 * allocations of every type in (after, before), in time order, of the hosts `join` (SQL
 * joined to the allocation `a`) keeps, then a NULL once there is none. Each step reads
 * the next end of each table through its index on upper(during): many allocations
 * ending at once (leases made for the same hour) cost one step.
 */
export function distinctEnds(
  name: string,
  join: string,
  [after, before]: [string, string],
  limit: string,
): string {
  const next = (x: string) =>
    ['host_allocations', 'instance_allocations']
      .map(
        (table) => `(SELECT upper(a.during) FROM ${table} a ${join}
                      WHERE upper(a.during) > ${x} AND upper(a.during) < ${before}
                      ORDER BY upper(a.during) LIMIT 1)`,
      )
      .join(', ');
  return `SELECT least(${next(after)}) AS t, 1 AS n
          UNION ALL
          SELECT least(${next('e.t')}), e.n + 1 FROM ${name} e WHERE e.t IS NOT NULL AND e.n < ${limit}`;
}

/** SQL: host `h` has no allocation and no slot at the instant `t`. */
export function notHeldAt(h: string, t: string): string {
  return `NOT EXISTS (SELECT 1 FROM host_allocations a
                      WHERE a.host_id = ${h}.id AND a.during @> ${t})
     AND NOT EXISTS (SELECT 1 FROM instance_allocations a
                      WHERE a.host_id = ${h}.id AND a.during @> ${t})`;
}

/** SQL: (host_id) of the hosts reservation `id` (SQL) holds, whole or by slots. */
export function hostIdsOfSql(id: string): string {
  return `SELECT host_id FROM host_allocations WHERE reservation_id = ${id}
                UNION SELECT host_id FROM instance_allocations WHERE reservation_id = ${id}`;
}

/**
 * SQL: (lease_id, start, end) of each whole-host allocation of the project's leases that
 * overlaps `window`, cut at its lease's end (what project limits count).
 */
export function projectHostSpansSql(p: SqlParams, projectId: string, window: Span): string {
  return `SELECT r.lease_id, lower(a.during) AS start, least(upper(a.during), l.end_at) AS end
              FROM host_allocations a
              JOIN reservations r ON r.id = a.reservation_id
              JOIN leases l ON l.id = r.lease_id
             WHERE l.project_id = ${p.bind(projectId)} AND a.during && tstzrange(${p.bind(window.start)}::timestamptz, ${p.bind(window.end)}::timestamptz, '[)')`;
}

/** The active reservations whose claimed servers run on the host. */
export async function claimedOn(tx: EntityManager, hostId: number): Promise<string[]> {
  const { rows } = await sql<{ reservation_id: string }>(
    tx,
    `SELECT DISTINCT c.reservation_id FROM claims c JOIN reservations r ON r.id = c.reservation_id
        WHERE c.host_id = $1 AND r.status = 'active' ORDER BY 1`,
    [hostId],
  );
  return rows.map((r) => r.reservation_id);
}

export interface AllocationQuery {
  leaseId: string | null;
  reservationId: string | null;
  /** Past leases too (a lease or reservation was named); otherwise those ending from `now`. */
  unbounded: boolean;
  now: Date;
  start: Date | null;
  end: Date | null;
  hostId: number | null;
}

/**
 * One row per host (of `hostId`, or all) with the reservations on it, whole-host and
 * instance slots, as GET /v1/os-hosts/allocations lists them.
 */
export async function allocationsByHost(
  em: EntityManager,
  f: AllocationQuery,
): Promise<{ host_id: number; name: string; reservations: JsonObject[] }[]> {
  const { rows } = await sql<{ host_id: number; name: string; reservations: JsonObject[] }>(
    em,
    `SELECT h.id AS host_id, h.hypervisor_hostname AS name,
              coalesce(json_agg(json_build_object('id', x.reservation_id, 'lease_id', x.lease_id,
                                                  'start_at', x.start_at, 'end_at', x.end_at,
                                                  'project_id', x.project_id,
                                                  'user_id', x.user_id, 'slots', x.slots)
                                ORDER BY x.start_at, x.reservation_id)
                       FILTER (WHERE x.reservation_id IS NOT NULL), '[]') AS reservations
         FROM ${hostsAs('h')}
         LEFT JOIN (
           SELECT DISTINCT a.host_id, r.id AS reservation_id, l.id AS lease_id, l.start_at, l.end_at,
                  l.project_id, l.user_id,
                  (SELECT i.slots FROM instance_allocations i
                    WHERE i.reservation_id = r.id AND i.host_id = a.host_id) AS slots
             FROM ${HOST_USAGE} a
             JOIN reservations r ON r.id = a.reservation_id
             JOIN leases l ON l.id = r.lease_id
            WHERE ($1::uuid IS NULL OR l.id = $1)
              AND ($2::uuid IS NULL OR r.id = $2)
              AND ($3 OR l.end_at >= $4)
              AND ($5::timestamptz IS NULL OR l.end_at > $5)
              AND ($6::timestamptz IS NULL OR l.start_at < $6)) x ON x.host_id = h.id
        WHERE ($7::int IS NULL OR h.id = $7)
        GROUP BY h.id ORDER BY h.id`,
    [f.leaseId, f.reservationId, f.unbounded, f.now, f.start, f.end, f.hostId],
  );
  return rows;
}

/** Every allocation and slot with its lease's name, as the importer compares them. */
export interface LeasedUsage {
  id: string;
  reservation_id: string;
  host_id: number;
  lo: Date;
  up: Date;
  /** Null for a whole-host allocation. */
  slots: number | null;
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
  lease: string;
}

export async function usageWithLeases(em: EntityManager): Promise<LeasedUsage[]> {
  const { rows } = await sql<LeasedUsage>(
    em,
    `SELECT a.id, a.reservation_id, a.host_id, lower(a.during) AS lo, upper(a.during) AS up,
            a.slots, a.vcpus, a.memory_mb, a.disk_gb, 'lease ' || l.name || ' (' || l.id || ')' AS lease
       FROM (SELECT id, reservation_id, host_id, during, NULL::int AS slots, 0 AS vcpus, 0 AS memory_mb, 0 AS disk_gb
               FROM host_allocations
             UNION ALL
             SELECT id, reservation_id, host_id, during, slots, vcpus, memory_mb, disk_gb
               FROM instance_allocations) a
       JOIN reservations r ON r.id = a.reservation_id JOIN leases l ON l.id = r.lease_id`,
  );
  return rows;
}

/** The slots of the active reservations, by host name (what adoption sizes in Nova). */
export async function activeSlots(
  em: EntityManager,
): Promise<{ reservation_id: string; host: string; slots: number }[]> {
  const { rows } = await sql<{ reservation_id: string; host: string; slots: number }>(
    em,
    `SELECT ia.reservation_id, h.hypervisor_hostname AS host, ia.slots
       FROM instance_allocations ia ${hostJoin('h', 'ia.host_id')}
       JOIN reservations r ON r.id = ia.reservation_id WHERE r.status = 'active'`,
  );
  return rows;
}
