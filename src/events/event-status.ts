/** Event state machine, pure. The manager is the only writer of these transitions. */
export const EVENT_STATUSES = ['UNDONE', 'IN_PROGRESS', 'DONE', 'ERROR'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const EVENT_TYPES = ['start_lease', 'before_end_lease', 'end_lease'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const NEXT: Record<EventStatus, readonly EventStatus[]> = {
  // UNDONE -> IN_PROGRESS: claimed by a manager.
  UNDONE: ['IN_PROGRESS'],
  // IN_PROGRESS -> UNDONE: a failed attempt waits for its retry.
  IN_PROGRESS: ['DONE', 'ERROR', 'UNDONE'],
  // DONE -> UNDONE: a lease update moved a finished before_end event into the future.
  DONE: ['UNDONE'],
  ERROR: [],
};

export function canEventTransition(from: EventStatus, to: EventStatus): boolean {
  return NEXT[from].includes(to);
}

/**
 * The order in which due events run: a lease's start before its before-end and end;
 * across leases ends run before starts (see the manager).
 */
export function eventTypeRank(type: EventType): number {
  return EVENT_TYPES.indexOf(type);
}

/** Retry delay after a failed attempt: doubling from `baseMs`, at most 5 minutes. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempt - 1), 300_000);
}
