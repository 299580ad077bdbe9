/**
 * User-defined events (`events` in a create or update body), as Blazar keeps them: stored
 * with the lease and shown among its events, never run. They live in the lease's own
 * row (`leases.user_events`), apart from the events table the manager claims from, so
 * no manager can ever take one for a start or an end.
 */
import { formatTimestamp, formatWireDate, parseInputDate } from '../common/dates.js';
import { InvalidInput } from '../common/errors.js';
import { newId } from '../common/ids.js';
import { characters } from '../common/storable.js';
import type { StoredUserEvent as UserEvent } from '../model/lease.entity.js';
import type { LeaseEventResponse } from './dto/lease.response.js';

/** Bounds that keep a lease row small; Blazar has none. */
const MAX_EVENTS = 50;
const MAX_TEXT = 255;

function text(value: unknown, name: string, i: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || characters(value) > MAX_TEXT) {
    throw new InvalidInput(
      `events[${i}].${name} must be a string of at most ${MAX_TEXT} characters`,
    );
  }
  return value;
}

/**
 * The user-defined events of a body, checked: a list (null or absent: none) of objects
 * whose `event_type`, `time` (or the blazar CLI's `event_date`) and `status` are kept, as
 * Blazar keeps its event columns; other keys are dropped, as Blazar drops them.
 */
export function toUserEvents(value: unknown, now: Date): UserEvent[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new InvalidInput('events must be a list');
  if (value.length > MAX_EVENTS) {
    throw new InvalidInput(`events: at most ${MAX_EVENTS} user-defined events`);
  }
  return value.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new InvalidInput('each event must be an object');
    }
    const e = item as Record<string, unknown>;
    const when = e.time ?? e.event_date;
    return {
      id: newId(),
      event_type: text(e.event_type, 'event_type', i),
      time:
        when === undefined || when === null || when === ''
          ? null
          : parseInputDate(when, now).toISOString(),
      status: text(e.status, 'status', i),
      created_at: now.toISOString(),
    };
  });
}

/** A user-defined event on the wire, in the shape of the lease's other events. */
export function toUserEventWire(leaseId: string, e: UserEvent): LeaseEventResponse {
  return {
    id: e.id,
    lease_id: leaseId,
    event_type: e.event_type,
    time: e.time === null ? null : formatWireDate(new Date(e.time)),
    status: e.status,
    last_error: null,
    created_at: formatTimestamp(new Date(e.created_at)),
    updated_at: null,
  };
}
