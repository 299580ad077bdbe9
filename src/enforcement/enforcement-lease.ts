import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { LeaseEvent } from '../model/lease-event.entity.js';
import { Host } from '../hosts/entities/host.entity.js';
import { toHostWire } from '../hosts/host.mapper.js';
import type { Lease } from '../model/lease.entity.js';
import { HOST_USAGE } from '../pools/host-usage.js';
import type { Reservation } from '../model/reservation.entity.js';
import type { LeaseWires } from './lease-wires.js';

/** Blazar's enforcement context: who asks, and where their Keystone is. */
export interface EnforcementContext {
  user_id: string;
  project_id: string;
  auth_url: string | null;
  region_name: string | null;
}

/** Python's datetime.isoformat() of a naive UTC time, as Blazar's JSON encoder writes it. */
export function isoNaive(d: Date): string {
  const iso = d.toISOString().slice(0, 23);
  const ms = d.getUTCMilliseconds();
  return ms === 0 ? iso.slice(0, 19) : `${iso}000`;
}

/** Reservation keys a create request does not have (Blazar sends the request's values). */
const STORED_ONLY = [
  'id',
  'lease_id',
  'resource_id',
  'status',
  'missing_resources',
  'resources_changed',
  'created_at',
  'updated_at',
];

/**
 * The lease as Blazar's filters receive it: the lease's values, and each reservation with
 * `allocations`, the hosts (as the host API shows them) its allocations are on, or what
 * `held` says it holds (a type's own objects, e.g. floating IPs). Unlike
 * Blazar, allocations are per reservation, not per resource type. With `asRequest` (a
 * create) it has the request's values only: no id, status, timestamps or events.
 */
export async function enforcementLease(
  em: EntityManager,
  wires: LeaseWires,
  lease: Lease,
  reservations: Reservation[],
  asRequest = false,
  held: Map<string, object[]> = new Map(),
): Promise<Record<string, unknown>> {
  const events = await em.find(LeaseEvent, { where: { leaseId: lease.id } });
  const parts = { lease, reservations, events };
  const wire = await wires.wire(em, parts);
  const hosts = await hostsByReservation(
    em,
    reservations.map((r) => r.id),
  );
  const byId = new Map(reservations.map((r) => [r.id, r]));
  const out: Record<string, unknown> = {
    ...wire,
    start_date: isoNaive(lease.startAt),
    end_date: isoNaive(lease.endAt),
    created_at: isoNaive(lease.createdAt),
    updated_at: lease.updatedAt === null ? null : isoNaive(lease.updatedAt),
    events: wire.events.map((e) => {
      const time = events.find((stored) => stored.id === e.id)?.time;
      return { ...e, time: time === undefined ? e.time : isoNaive(time) };
    }),
    reservations: wire.reservations.map((r) => {
      const values: Record<string, unknown> = { ...r };
      if (asRequest) for (const key of STORED_ONLY) delete values[key];
      const stored = byId.get(r.id);
      values.allocations =
        stored === undefined ? [] : (held.get(stored.id) ?? hosts.get(stored.id) ?? []);
      return values;
    }),
  };
  if (asRequest) {
    for (const key of ['id', 'status', 'degraded', 'created_at', 'updated_at', 'events']) {
      delete out[key];
    }
  }
  return out;
}

async function hostsByReservation(
  em: EntityManager,
  ids: string[],
): Promise<Map<string, object[]>> {
  const out = new Map<string, object[]>();
  if (ids.length === 0) return out;
  const { rows } = await sql<{ reservation_id: string; host_id: number }>(
    em,
    `SELECT DISTINCT reservation_id, host_id FROM ${HOST_USAGE} u
      WHERE reservation_id = ANY($1) ORDER BY host_id`,
    [ids],
  );
  const hostIds = [...new Set(rows.map((r) => r.host_id))];
  const hosts =
    hostIds.length === 0
      ? []
      : await em.createQueryBuilder(Host, 'h').where('h.id = ANY(:hostIds)', { hostIds }).getMany();
  const wire = new Map(hosts.map((h) => [h.id, toHostWire(h, null)]));
  for (const row of rows) {
    const host = wire.get(row.host_id);
    if (host !== undefined)
      out.set(row.reservation_id, [...(out.get(row.reservation_id) ?? []), host]);
  }
  return out;
}
