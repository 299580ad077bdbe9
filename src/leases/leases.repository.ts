import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { LeaseEvent } from '../model/lease-event.entity.js';
import { Reservation } from '../model/reservation.entity.js';
import { Lease } from '../model/lease.entity.js';
import type { LeaseParts } from './lease.mapper.js';
import { isUuid } from '../common/ids.js';
import type { SqlParams } from '../database/sql.js';

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

@Injectable()
export class LeasesRepository {
  /** Takes the lease's row lock for the rest of the transaction. */
  async lock(tx: EntityManager, id: string): Promise<Lease | null> {
    if (!isUuid(id)) return null;
    return tx.findOne(Lease, { where: { id }, lock: { mode: 'pessimistic_write' } });
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

  async parts(em: EntityManager, lease: Lease): Promise<LeaseParts> {
    const [parts] = await this.withParts(em, [lease]);
    return parts;
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
