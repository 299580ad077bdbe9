import type { Identity } from '../common/auth/identity.js';
import { newId } from '../common/ids.js';
import type { JsonObject } from '../common/json.js';
import type { EventType } from '../model/event-status.js';
import { LeaseEvent } from '../model/lease-event.entity.js';
import { Lease, type StoredUserEvent } from '../model/lease.entity.js';
import { Reservation } from '../model/reservation.entity.js';
import type { Window } from '../plugins/resource-plugin.js';
import type { LeaseParts } from './lease.mapper.js';

export interface PlannedReservation {
  type: string;
  params: JsonObject;
}

export interface Times extends Window {
  beforeEnd: Date | null;
}

/** The new lease, its reservations and events, in memory. */
export function newLease(
  caller: Identity,
  name: string,
  planned: PlannedReservation[],
  times: Times,
  trustId: string | null,
  now: Date,
  userEvents: StoredUserEvent[],
): LeaseParts {
  const lease = Object.assign(new Lease(), {
    id: newId(),
    name,
    projectId: caller.projectId,
    userId: caller.userId,
    startAt: times.start,
    endAt: times.end,
    status: 'PENDING',
    degraded: false,
    version: 1,
    trustId,
    userEvents: userEvents.length === 0 ? null : userEvents,
    createdAt: now,
    updatedAt: null,
  });
  const reservations = planned.map((p) =>
    Object.assign(new Reservation(), {
      id: newId(),
      leaseId: lease.id,
      resourceType: p.type,
      resourceId: null,
      status: 'pending',
      missingResources: false,
      resourcesChanged: false,
      params: p.params,
      createdAt: now,
      updatedAt: null,
    }),
  );
  const eventTimes: [EventType, Date | null][] = [
    ['start_lease', times.start],
    ['end_lease', times.end],
    ['before_end_lease', times.beforeEnd],
  ];
  const events = eventTimes
    .filter((e): e is [EventType, Date] => e[1] !== null)
    .map(([type, time]) => newEvent(lease.id, type, time, now));
  return { lease, reservations, events };
}

function newEvent(leaseId: string, eventType: EventType, time: Date, now: Date): LeaseEvent {
  return Object.assign(new LeaseEvent(), {
    id: newId(),
    leaseId,
    eventType,
    time,
    status: 'UNDONE',
    attempts: 0,
    lastError: null,
    retryAt: null,
    claimedBy: null,
    claimExpiresAt: null,
    createdAt: now,
    updatedAt: null,
  });
}
