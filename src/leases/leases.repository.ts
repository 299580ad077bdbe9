import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { LeaseEvent } from '../model/lease-event.entity.js';
import { Reservation } from '../model/reservation.entity.js';
import { Lease } from '../model/lease.entity.js';
import type { LeaseParts } from './lease.mapper.js';
import { markerValueSql } from '../model/lease-tables.js';
import {
  enterStatusSql,
  LEASE_PARTS_SQL,
  lockLeaseSql,
  reservationsOfSql,
} from '../model/lease-tables-status.js';
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

@Injectable()
export class LeasesRepository {
  /**
   * Takes the lease's row lock for the rest of the transaction. A prepared statement: in
   * a framed transaction (withFramedTransaction) BEGIN goes with it.
   */
  async lock(tx: EntityManager, id: string): Promise<Lease | null> {
    if (!isUuid(id)) return null;
    const { rows } = await sql<LeaseRow>(tx, lockLeaseSql(LEASE_COLUMNS), [id], {
      prepare: true,
    });
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
    const { rows } = await sql<ReservationRow>(
      tx,
      enterStatusSql(p, id, status, now, RESERVATION_COLUMNS),
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
      reservationsOfSql(RESERVATION_COLUMNS),
      [leaseId],
      { ...options, prepare: true },
    );
    return rows.map(toReservation);
  }

  /** One lease's reservations and events, in one prepared statement. */
  async parts(em: EntityManager, lease: Lease): Promise<LeaseParts> {
    const { rows } = await sql<{ reservations: ReservationRow[]; events: EventRow[] }>(
      em,
      LEASE_PARTS_SQL,
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
      const markerValue = markerValueSql(filter.sortKey);
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
