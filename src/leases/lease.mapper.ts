import { formatTimestamp, formatWireDate } from '../common/dates.js';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import type { EntityManager } from 'typeorm';
import type { PluginRegistry } from '../plugins/plugin-registry.js';
import type { ReservationResponse } from '../plugins/dto/reservation.response.js';
import type { Reservation } from '../model/reservation.entity.js';
import type { LeaseEventResponse, LeaseResponse } from './dto/lease.response.js';
import type { Lease } from '../model/lease.entity.js';
import { toUserEventWire } from './user-events.js';

export interface LeaseParts {
  lease: Lease;
  reservations: Reservation[];
  events: LeaseEvent[];
}

export function toEventWire(e: LeaseEvent): LeaseEventResponse {
  return {
    id: e.id,
    lease_id: e.leaseId,
    event_type: e.eventType,
    time: formatWireDate(e.time),
    status: e.status,
    // Why the last attempt failed (kept while it is retried): beyond Blazar's fields.
    last_error: e.lastError,
    created_at: formatTimestamp(e.createdAt),
    updated_at: formatTimestamp(e.updatedAt),
  };
}

export function toReservationWire(
  r: Reservation,
  plugins: PluginRegistry,
  extra: object = {},
): ReservationResponse {
  let typed: object;
  try {
    typed = plugins.get(r.resourceType).present(r);
  } catch {
    // The plugin was disabled after the lease was made: show what was stored.
    typed = r.params;
  }
  return {
    id: r.id,
    lease_id: r.leaseId,
    resource_id: r.resourceId ?? r.id,
    resource_type: r.resourceType,
    status: r.status,
    missing_resources: r.missingResources,
    resources_changed: r.resourcesChanged,
    created_at: formatTimestamp(r.createdAt),
    updated_at: formatTimestamp(r.updatedAt),
    ...typed,
    ...extra,
  };
}

const EVENT_ORDER = ['start_lease', 'before_end_lease', 'end_lease'];

/** The Blazar lease object. */
export function toLeaseWire(
  parts: LeaseParts,
  plugins: PluginRegistry,
  extra: Map<string, object> = new Map(),
): LeaseResponse {
  const { lease } = parts;
  const events = [...parts.events].sort(
    (a, b) => EVENT_ORDER.indexOf(a.eventType) - EVENT_ORDER.indexOf(b.eventType),
  );
  return {
    id: lease.id,
    name: lease.name,
    start_date: formatWireDate(lease.startAt),
    end_date: formatWireDate(lease.endAt),
    status: lease.status,
    degraded: lease.degraded,
    user_id: lease.userId,
    project_id: lease.projectId,
    trust_id: lease.trustId,
    created_at: formatTimestamp(lease.createdAt),
    updated_at: formatTimestamp(lease.updatedAt),
    reservations: parts.reservations.map((r) => toReservationWire(r, plugins, extra.get(r.id))),
    // User-defined events after the lease's own, as stored; the manager never runs them.
    events: [
      ...events.map(toEventWire),
      ...(lease.userEvents ?? []).map((e) => toUserEventWire(lease.id, e)),
    ],
  };
}

/** Plugins' database-backed details (`describe`) for every reservation of these leases. */
export async function describeAll(
  em: EntityManager,
  parts: LeaseParts[],
  plugins: PluginRegistry,
): Promise<Map<string, object>> {
  const byType = new Map<string, Reservation[]>();
  for (const r of parts.flatMap((p) => p.reservations)) {
    byType.set(r.resourceType, [...(byType.get(r.resourceType) ?? []), r]);
  }
  const out = new Map<string, object>();
  for (const [type, reservations] of byType) {
    let plugin;
    try {
      plugin = plugins.get(type);
    } catch {
      continue;
    }
    if (plugin.describe === undefined) continue;
    for (const [id, details] of await plugin.describe(em, reservations)) out.set(id, details);
  }
  return out;
}
