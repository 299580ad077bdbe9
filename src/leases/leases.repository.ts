import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { LeaseEvent } from '../model/lease-event.entity.js';
import { Reservation } from '../model/reservation.entity.js';
import { Lease } from '../model/lease.entity.js';
import type { LeaseParts } from './lease.mapper.js';
import { isUuid } from '../common/ids.js';
import { sql, SqlParams, type SqlOptions } from '../database/sql.js';
import type { LeaseStatus } from '../model/lease-status.js';
import {
  toEvent,
  toLease,
  toReservation,
  type EventRow,
  LEASE_COLUMNS,
  type LeaseRow,
  RESERVATION_COLUMNS,
  type ReservationRow,
} from './lease-rows.js';

export interface LeaseFilter {
  projectId?: string;
  status?: string;
  /** A time window: leases ending after `endsAfter` and starting before `startsBefore`. */
  endsAfter?: Date;
  startsBefore?: Date;
  limit?: number;
  marker?: Lease;
  sortKey: 'created_at' | 'name' | 'start_at' | 'end_at' | 'status';
  sortDir: 'ASC' | 'DESC';
}

const SORT_PROPERTY = {
  created_at: 'createdAt',
  name: 'name',
  start_at: 'startAt',
  end_at: 'endAt',
  status: 'status',
} as const;

/**
 * CTEs (`l`, `r`, `e`) that insert a new lease, its reservations and its events in one
 * statement, values bound with `p`, written if `go` (an SQL boolean). The text is the
 * same whatever the counts (arrays are bound), so the statement can be prepared.
 */
export function newLeaseSql(p: SqlParams, parts: LeaseParts, go: string): string[] {
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

/** Sets a lease's status: a statement (or CTE body) whose values `p` binds. */
export function setStatusSql(p: SqlParams, id: string, status: LeaseStatus, now: Date): string {
  const [s, t, i] = [p.bind(status), p.bind(now), p.bind(id)];
  return `UPDATE leases SET status = ${s}, updated_at = ${t}::timestamptz WHERE id = ${i}::uuid`;
}

@Injectable()
export class LeasesRepository {
  /**
   * Takes the lease's row lock for the rest of the transaction. A prepared statement: in
   * a framed transaction (withFramedTransaction) BEGIN goes with it.
   */
  async lock(tx: EntityManager, id: string): Promise<Lease | null> {
    if (!isUuid(id)) return null;
    const { rows } = await sql<LeaseRow>(
      tx,
      `SELECT ${LEASE_COLUMNS} FROM leases WHERE id = $1 FOR UPDATE`,
      [id],
      {
        prepare: true,
      },
    );
    return rows.length === 0 ? null : toLease(rows[0]);
  }

  /**
   * Sets the lease's status (the caller holds its lock) and returns its reservations, in
   * one prepared statement.
   */
  async enterStatus(
    tx: EntityManager,
    id: string,
    status: LeaseStatus,
    now: Date,
    options: SqlOptions = {},
  ): Promise<Reservation[]> {
    const p = new SqlParams();
    const set = setStatusSql(p, id, status, now);
    const { rows } = await sql<ReservationRow>(
      tx,
      `WITH s AS (${set})
       SELECT ${RESERVATION_COLUMNS} FROM reservations
        WHERE lease_id = ${p.bind(id)}::uuid ORDER BY created_at, id`,
      p.values,
      { ...options, prepare: true },
    );
    return rows.map(toReservation);
  }

  async find(em: EntityManager, id: string): Promise<Lease | null> {
    if (!isUuid(id)) return null;
    return em.findOne(Lease, { where: { id } });
  }

  /** Leases with their reservations and events: three queries whatever the count. */
  async withParts(em: EntityManager, leases: Lease[]): Promise<LeaseParts[]> {
    if (leases.length === 0) return [];
    const ids = leases.map((l) => l.id);
    // One array parameter each, however many leases (PostgreSQL takes 65,535 parameters).
    const [reservations, events] = await Promise.all([
      em
        .createQueryBuilder(Reservation, 'r')
        .where('r.lease_id = ANY(:ids)', { ids })
        .orderBy('r.created_at', 'ASC')
        .addOrderBy('r.id', 'ASC')
        .getMany(),
      em.createQueryBuilder(LeaseEvent, 'e').where('e.lease_id = ANY(:ids)', { ids }).getMany(),
    ]);
    const byLease = new Map(
      leases.map((lease) => [
        lease.id,
        { lease, reservations: [] as Reservation[], events: [] as LeaseEvent[] },
      ]),
    );
    for (const r of reservations) byLease.get(r.leaseId)?.reservations.push(r);
    for (const e of events) byLease.get(e.leaseId)?.events.push(e);
    return [...byLease.values()];
  }

  /** One lease's reservations, in creation order (a prepared statement). */
  async reservationsOf(
    em: EntityManager,
    leaseId: string,
    options: SqlOptions = {},
  ): Promise<Reservation[]> {
    const { rows } = await sql<ReservationRow>(
      em,
      `SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE lease_id = $1 ORDER BY created_at, id`,
      [leaseId],
      { ...options, prepare: true },
    );
    return rows.map(toReservation);
  }

  /** One lease's reservations and events, in one prepared statement. */
  async parts(em: EntityManager, lease: Lease): Promise<LeaseParts> {
    const { rows } = await sql<{ reservations: ReservationRow[]; events: EventRow[] }>(
      em,
      `SELECT (SELECT coalesce(json_agg(r ORDER BY r.created_at, r.id), '[]')
                 FROM reservations r WHERE r.lease_id = $1) AS reservations,
              (SELECT coalesce(json_agg(e), '[]') FROM events e WHERE e.lease_id = $1) AS events`,
      [lease.id],
      { prepare: true },
    );
    return {
      lease,
      reservations: rows[0].reservations.map(toReservation),
      events: rows[0].events.map(toEvent),
    };
  }

  /** One page of leases, keyset-paged after `marker` in (sort key, id) order. */
  async list(em: EntityManager, filter: LeaseFilter): Promise<Lease[]> {
    const column = `l.${filter.sortKey}`;
    const qb = em.createQueryBuilder(Lease, 'l');
    if (filter.projectId !== undefined)
      qb.andWhere('l.project_id = :project', { project: filter.projectId });
    if (filter.status !== undefined) qb.andWhere('l.status = :status', { status: filter.status });
    if (filter.endsAfter !== undefined)
      qb.andWhere('l.end_at > :after', { after: filter.endsAfter });
    if (filter.startsBefore !== undefined)
      qb.andWhere('l.start_at < :before', { before: filter.startsBefore });
    if (filter.marker !== undefined) {
      const op = filter.sortDir === 'ASC' ? '>' : '<';
      // The marker row's own value, at the precision stored (microseconds): a Date holds
      // milliseconds only, and rows written by SQL with now() would repeat forever. The
      // Date is kept for a marker deleted meanwhile.
      const markerValue = `COALESCE((SELECT m.${filter.sortKey} FROM leases m WHERE m.id = :markerId), :markerValue)`;
      qb.andWhere(`(${column}, l.id) ${op} (${markerValue}, :markerId)`, {
        markerValue: filter.marker[SORT_PROPERTY[filter.sortKey]],
        markerId: filter.marker.id,
      });
    }
    qb.orderBy(column, filter.sortDir).addOrderBy('l.id', filter.sortDir);
    if (filter.limit !== undefined) qb.limit(filter.limit);
    return qb.getMany();
  }
}
