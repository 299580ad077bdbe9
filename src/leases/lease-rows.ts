import type { JsonObject } from '../common/json.js';
import type { EventStatus, EventType } from '../model/event-status.js';
import { LeaseEvent } from '../model/lease-event.entity.js';
import type { LeaseStatus } from '../model/lease-status.js';
import { Lease, type StoredUserEvent } from '../model/lease.entity.js';
import type { ReservationStatus } from '../model/reservation-status.js';
import { Reservation } from '../model/reservation.entity.js';

/**
 * Rows of raw SQL as entities, for the hot paths that skip TypeORM's query building.
 * A row comes from `SELECT *` (timestamps as Date) or from `json_agg` (as ISO text).
 */
type Time = Date | string;

const date = (t: Time): Date => (t instanceof Date ? t : new Date(t));
const maybeDate = (t: Time | null): Date | null => (t === null ? null : date(t));

export interface LeaseRow {
  id: string;
  name: string;
  project_id: string;
  user_id: string;
  start_at: Time;
  end_at: Time;
  status: LeaseStatus;
  degraded: boolean;
  version: number;
  trust_id: string | null;
  user_events: StoredUserEvent[] | null;
  created_at: Time;
  updated_at: Time | null;
}

/** The columns of LeaseRow, for a statement that returns them. */
export const LEASE_COLUMNS = `id, name, project_id, user_id, start_at, end_at, status, degraded,
  version, trust_id, user_events, created_at, updated_at`;

export function toLease(row: LeaseRow): Lease {
  return Object.assign(new Lease(), {
    id: row.id,
    name: row.name,
    projectId: row.project_id,
    userId: row.user_id,
    startAt: date(row.start_at),
    endAt: date(row.end_at),
    status: row.status,
    degraded: row.degraded,
    version: row.version,
    trustId: row.trust_id,
    userEvents: row.user_events,
    createdAt: date(row.created_at),
    updatedAt: maybeDate(row.updated_at),
  });
}

export interface ReservationRow {
  id: string;
  lease_id: string;
  resource_type: string;
  resource_id: string | null;
  status: ReservationStatus;
  missing_resources: boolean;
  resources_changed: boolean;
  params: JsonObject;
  created_at: Time;
  updated_at: Time | null;
}

/** The columns of ReservationRow, for a statement that returns them. */
export const RESERVATION_COLUMNS = `id, lease_id, resource_type, resource_id, status,
  missing_resources, resources_changed, params, created_at, updated_at`;

export function toReservation(row: ReservationRow): Reservation {
  return Object.assign(new Reservation(), {
    id: row.id,
    leaseId: row.lease_id,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    status: row.status,
    missingResources: row.missing_resources,
    resourcesChanged: row.resources_changed,
    params: row.params,
    createdAt: date(row.created_at),
    updatedAt: maybeDate(row.updated_at),
  });
}

export interface EventRow {
  id: string;
  lease_id: string;
  event_type: EventType;
  time: Time;
  status: EventStatus;
  attempts: number;
  last_error: string | null;
  retry_at: Time | null;
  claimed_by: string | null;
  claim_expires_at: Time | null;
  created_at: Time;
  updated_at: Time | null;
}

/** The columns of EventRow, for a statement that returns them. */
export const EVENT_COLUMNS = `id, lease_id, event_type, time, status, attempts, last_error,
  retry_at, claimed_by, claim_expires_at, created_at, updated_at`;

export function toEvent(row: EventRow): LeaseEvent {
  return Object.assign(new LeaseEvent(), {
    id: row.id,
    leaseId: row.lease_id,
    eventType: row.event_type,
    time: date(row.time),
    status: row.status,
    attempts: row.attempts,
    lastError: row.last_error,
    retryAt: maybeDate(row.retry_at),
    claimedBy: row.claimed_by,
    claimExpiresAt: maybeDate(row.claim_expires_at),
    createdAt: date(row.created_at),
    updatedAt: maybeDate(row.updated_at),
  });
}
