import type { EntityManager } from 'typeorm';
import { columns, sql, type SqlParams } from '../database/sql.js';
import type { LeaseEvent } from './lease-event.entity.js';
import type { Lease } from './lease.entity.js';
import type { Reservation } from './reservation.entity.js';

/*
 * The SQL of the leases, reservations and events tables (docs/development.md, "Who owns
 * each table"), on the model's floor so that every floor above reaches it.
 */

/** `JOIN reservations <r> ON <r>.id = <on>`: the reservation a row (an allocation) is for. */
export function reservationJoin(r: string, on: string): string {
  return `JOIN reservations ${r} ON ${r}.id = ${on}`;
}

/** `JOIN leases <l> ON <l>.id = <r>.lease_id`: the lease of reservation `r`. */
export function leaseJoin(l: string, r: string): string {
  return `JOIN leases ${l} ON ${l}.id = ${r}.lease_id`;
}

/** `reservations <r>`: the table, for a statement that starts from a type's reservations. */
export function reservationsAs(r: string): string {
  return `reservations ${r}`;
}

/**
 * CTEs (`l`, `r`, `e`) that insert a new lease, its reservations and its events in one
 * statement, values bound with `p`, written if `go` (an SQL boolean). The text is the
 * same whatever the counts (arrays are bound), so the statement can be prepared.
 */
export function newLeaseSql(
  p: SqlParams,
  parts: { lease: Lease; reservations: Reservation[]; events: LeaseEvent[] },
  go: string,
): string[] {
  const { lease, reservations, events } = parts;
  const id = `${p.bind(lease.id)}::uuid`;
  const created = `${p.bind(lease.createdAt)}::timestamptz`;
  const rows = (columns: [unknown[], string][]) =>
    columns.map(([values, type]) => `${p.bind(values)}::${type}[]`).join(', ');
  return [
    `l AS (INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, degraded,
                               version, trust_id, user_events, created_at)
       SELECT ${id}, ${p.bind(lease.name)}, ${p.bind(lease.projectId)}, ${p.bind(lease.userId)},
              ${p.bind(lease.startAt)}::timestamptz, ${p.bind(lease.endAt)}::timestamptz,
              ${p.bind(lease.status)}, false, ${p.bind(lease.version)}::int, ${p.bind(lease.trustId)},
              ${p.bind(lease.userEvents === null ? null : JSON.stringify(lease.userEvents))}::jsonb,
              ${created}
        WHERE ${go})`,
    `r AS (INSERT INTO reservations (id, lease_id, resource_type, status, params, created_at)
       SELECT x.id, ${id}, x.type, x.status, x.params, ${created}
         FROM unnest(${rows([
           [reservations.map((r) => r.id), 'uuid'],
           [reservations.map((r) => r.resourceType), 'text'],
           [reservations.map((r) => r.status), 'text'],
           [reservations.map((r) => JSON.stringify(r.params)), 'jsonb'],
         ])}) AS x(id, type, status, params)
        WHERE ${go})`,
    `e AS (INSERT INTO events (id, lease_id, event_type, time, status, created_at)
       SELECT x.id, ${id}, x.type, x.time, x.status, ${created}
         FROM unnest(${rows([
           [events.map((e) => e.id), 'uuid'],
           [events.map((e) => e.eventType), 'text'],
           [events.map((e) => e.time), 'timestamptz'],
           [events.map((e) => e.status), 'text'],
         ])}) AS x(id, type, time, status)
        WHERE ${go})`,
  ];
}

/**
 * The lease list's marker value (TypeORM parameters `:markerId`, `:markerValue`): the
 * marker row's own `column`, at the precision stored, or the Date when it was deleted.
 */
export function markerValueSql(column: string): string {
  return `COALESCE((SELECT m.${column} FROM leases m WHERE m.id = :markerId), :markerValue)`;
}

/** Whether the lease is still there, pending, and starts after `now`. */
export async function waitsForStart(
  em: EntityManager,
  leaseId: string,
  now: Date,
): Promise<boolean> {
  const { rows } = await sql(
    em,
    `SELECT 1 FROM leases WHERE id = $1 AND status = 'PENDING' AND start_at > $2`,
    [leaseId, now],
  );
  return rows.length > 0;
}

export async function forgetTrust(em: EntityManager, leaseId: string): Promise<void> {
  await sql(em, `UPDATE leases SET trust_id = NULL WHERE id = $1`, [leaseId]);
}

/** Terminated leases that still name a trust (its deletion failed before). */
export async function terminatedWithTrusts(
  em: EntityManager,
): Promise<{ id: string; trust_id: string }[]> {
  const { rows } = await sql<{ id: string; trust_id: string }>(
    em,
    `SELECT id, trust_id FROM leases WHERE status = 'TERMINATED' AND trust_id IS NOT NULL LIMIT 100`,
  );
  return rows;
}

/** A lease is degraded exactly when one of its reservations misses resources. */
export async function refreshDegraded(tx: EntityManager, now: Date): Promise<void> {
  await sql(
    tx,
    `UPDATE leases l SET degraded = d.degraded, updated_at = $1
       FROM (SELECT r.lease_id, bool_or(r.missing_resources) AS degraded
               FROM reservations r GROUP BY r.lease_id) d
      WHERE d.lease_id = l.id AND l.degraded <> d.degraded`,
    [now],
  );
}

/**
 * Sets `missing_resources` of the live reservations to `missing` (SQL of whether the
 * reservation holds a lost host after `now`), where it changed.
 */
export async function refreshMissing(
  tx: EntityManager,
  now: Date,
  missing: (reservationId: string, now: string) => string,
): Promise<void> {
  await sql(
    tx,
    `UPDATE reservations r SET missing_resources = m.missing, updated_at = $1
       FROM (SELECT r2.id, ${missing('r2.id', '$1')} AS missing
               FROM reservations r2 WHERE r2.status IN ('pending', 'active')) m
      WHERE m.id = r.id AND r.missing_resources <> m.missing`,
    [now],
  );
}

/** Flags reservations whose resources changed (their hosts moved) for their next resync. */
export async function markResourcesChanged(
  tx: EntityManager,
  ids: string[],
  now: Date,
): Promise<void> {
  await sql(
    tx,
    `UPDATE reservations SET resources_changed = true, updated_at = $2 WHERE id = ANY($1)`,
    [ids, now],
  );
}

/** Takes the reservation's row lock for the rest of the transaction. */
export async function lockReservation(tx: EntityManager, id: string): Promise<void> {
  await sql(tx, `SELECT id FROM reservations WHERE id = $1 FOR UPDATE`, [id]);
}

/** Asks for a resync of the lease's active reservations at `at` (null: now). */
export async function askResync(
  tx: EntityManager,
  leaseId: string,
  at: Date | null,
): Promise<void> {
  await sql(
    tx,
    `UPDATE reservations SET resync_at = coalesce($2::timestamptz, now())
          WHERE lease_id = $1 AND status = 'active'`,
    [leaseId, at],
  );
}

/**
 * Claims up to `batch` due resyncs for `ttlMs` (from `at`, null: now), skipping those
 * another replica holds. Returns each with its claim, to finish by.
 */
export async function claimResyncs(
  em: EntityManager,
  at: Date | null,
  ttlMs: number,
  batch: number,
): Promise<{ id: string; claimed: Date }[]> {
  const { rows } = await sql<{ id: string; claimed: Date }>(
    em,
    `UPDATE reservations r SET resync_at = coalesce($1::timestamptz, now()) + $2 * interval '1 millisecond'
        WHERE r.id IN (SELECT id FROM reservations
                        WHERE resync_at <= coalesce($1::timestamptz, now()) AND status = 'active'
                        ORDER BY resync_at LIMIT ${batch} FOR UPDATE SKIP LOCKED)
        RETURNING r.id, r.resync_at AS claimed`,
    [at, ttlMs],
  );
  return rows;
}

/** Ends a resync claimed at `claimed` (a claim taken again since is left alone). */
export async function finishResync(em: EntityManager, id: string, claimed: Date): Promise<void> {
  await sql(em, `UPDATE reservations SET resync_at = NULL WHERE id = $1 AND resync_at = $2`, [
    id,
    claimed,
  ]);
}

/** Merges `patch` (JSON text) into the reservation's params as they are now. */
export async function mergeParams(em: EntityManager, id: string, patch: string): Promise<void> {
  await sql(em, `UPDATE reservations SET params = params || $2::jsonb WHERE id = $1`, [id, patch]);
}

/** The servers a host reservation's before-end snapshot has done (params.snapshotted). */
export async function snapshotted(em: EntityManager, id: string): Promise<string[] | null> {
  const { rows } = await sql<{ done: string[] | null }>(
    em,
    `SELECT params -> 'snapshotted' AS done FROM reservations WHERE id = $1`,
    [id],
  );
  return rows[0]?.done ?? null;
}

/** Records one more server snapshotted, so a retried before-end does not repeat it. */
export async function addSnapshotted(
  em: EntityManager,
  id: string,
  serverId: string,
): Promise<void> {
  await sql(
    em,
    `UPDATE reservations
            SET params = jsonb_set(params, '{snapshotted}', coalesce(params -> 'snapshotted', '[]') || to_jsonb($2::text))
          WHERE id = $1`,
    [id, serverId],
  );
}

/** Stamps `key` in a pending reservation's params with the time now (the database's). */
export async function stampParam(em: EntityManager, id: string, key: string): Promise<void> {
  await sql(
    em,
    `UPDATE reservations SET params = params || jsonb_build_object('${key}', now())
            WHERE id = $1 AND status = 'pending'`,
    [id],
  );
}

export async function dropParam(em: EntityManager, id: string, key: string): Promise<void> {
  await sql(em, `UPDATE reservations SET params = params - '${key}' WHERE id = $1`, [id]);
}

/** Locks the reservation if it is active; false when it is not. */
export async function lockActive(tx: EntityManager, id: string): Promise<boolean> {
  const locked = await sql(
    tx,
    `SELECT 1 FROM reservations WHERE id = $1 AND status = 'active' FOR UPDATE`,
    [id],
  );
  return locked.rows.length > 0;
}

/** Who owns the lease (`column` 'l.id') or the reservation's lease ('r.id') `id`; null: none. */
export async function ownerOf(
  em: EntityManager,
  column: 'l.id' | 'r.id',
  id: string,
): Promise<{ projectId: string; userId: string } | null> {
  const { rows } = await sql<{ projectId: string; userId: string }>(
    em,
    `SELECT l.project_id AS "projectId", l.user_id AS "userId"
           FROM leases l LEFT JOIN reservations r ON r.lease_id = l.id
          WHERE ${column} = $1 LIMIT 1`,
    [id],
  );
  return rows[0] ?? null;
}

/* The Blazar importer's bulk rows (columns by name, dates as ISO text or Date). */

const LEASE = ['id', 'name', 'project_id', 'user_id', 'start_at', 'end_at', 'status'] as const;
const LEASE_REST = ['degraded', 'trust_id', 'created_at', 'updated_at'] as const;
export type LeaseRecord = Record<(typeof LEASE)[number] | (typeof LEASE_REST)[number], unknown> & {
  user_events: unknown[] | null;
};
const RESERVATION = ['id', 'lease_id', 'resource_type', 'resource_id', 'status'] as const;
const RESERVATION_FLAGS = ['missing_resources', 'resources_changed'] as const;
const STAMPS = ['created_at', 'updated_at'] as const;
export type ReservationRecord = Record<
  (typeof RESERVATION)[number] | (typeof RESERVATION_FLAGS)[number] | (typeof STAMPS)[number],
  unknown
> & { params: unknown };
const EVENT = [
  'id',
  'lease_id',
  'event_type',
  'time',
  'status',
  'created_at',
  'updated_at',
] as const;
export type EventRecord = Record<(typeof EVENT)[number], unknown>;

export async function insertLeaseRows(tx: EntityManager, rows: LeaseRecord[]): Promise<void> {
  await sql(
    tx,
    `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, degraded, trust_id, created_at, updated_at,
                           user_events)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                            $7::text[], $8::bool[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::jsonb[])`,
    [
      ...columns(rows, LEASE),
      ...columns(rows, LEASE_REST),
      rows.map((r) => (r.user_events === null ? null : JSON.stringify(r.user_events))),
    ],
  );
}

export async function insertReservationRows(
  tx: EntityManager,
  rows: ReservationRecord[],
): Promise<void> {
  await sql(
    tx,
    `INSERT INTO reservations (id, lease_id, resource_type, resource_id, status, missing_resources,
                                 resources_changed, params, created_at, updated_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::bool[],
                            $8::jsonb[], $9::timestamptz[], $10::timestamptz[])`,
    [
      ...columns(rows, RESERVATION),
      ...columns(rows, RESERVATION_FLAGS),
      rows.map((r) => JSON.stringify(r.params)),
      ...columns(rows, STAMPS),
    ],
  );
}

export async function insertEventRows(tx: EntityManager, rows: EventRecord[]): Promise<void> {
  await sql(
    tx,
    `INSERT INTO events (id, lease_id, event_type, time, status, created_at, updated_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[],
                            $6::timestamptz[], $7::timestamptz[])`,
    columns(rows, EVENT),
  );
}

/** The leases of `ids`, their reservations and events, as the importer compares them. */
export async function leaseRecords(
  em: EntityManager,
  ids: string[],
): Promise<Record<'leases' | 'reservations' | 'events', Record<string, unknown>[]>> {
  const leases = await sql<Record<string, unknown>>(
    em,
    `SELECT id, name, project_id, user_id, start_at, end_at, status, degraded, trust_id, created_at, updated_at,
            user_events
       FROM leases WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  const reservations = await sql<Record<string, unknown>>(
    em,
    `SELECT id, lease_id, resource_type, resource_id, status, missing_resources, resources_changed,
            params, created_at, updated_at FROM reservations WHERE lease_id = ANY($1::uuid[])`,
    [ids],
  );
  const events = await sql<Record<string, unknown>>(
    em,
    `SELECT id, lease_id, event_type, time, status, created_at, updated_at
       FROM events WHERE lease_id = ANY($1::uuid[])`,
    [ids],
  );
  return { leases: leases.rows, reservations: reservations.rows, events: events.rows };
}

export interface AdoptedReservation {
  id: string;
  lease: string;
  type: string;
  status: string;
  lease_status: string;
  group_id: string | null;
}

/** Host and instance reservations with their leases, as adoption compares them with Nova. */
export async function adoptedReservations(em: EntityManager): Promise<AdoptedReservation[]> {
  const { rows } = await sql<AdoptedReservation>(
    em,
    `SELECT r.id, l.name || ' (' || l.id || ')' AS lease, r.resource_type AS type, r.status,
            l.status AS lease_status, r.params ->> 'server_group_id' AS group_id
       FROM reservations r JOIN leases l ON l.id = r.lease_id
      WHERE r.resource_type IN ('physical:host', 'virtual:instance')`,
  );
  return rows;
}

/** Adoption found the reservation's server group gone: it forgets it (a new one is made). */
export async function forgetServerGroup(em: EntityManager, id: string): Promise<void> {
  await sql(
    em,
    `UPDATE reservations SET params = params || '{"server_group_id": null}'::jsonb WHERE id = $1`,
    [id],
  );
}
