/**
 * Event statuses and types, and the retry delay. The lease use cases write events (a
 * create inserts them, an update moves their times and re-arms a finished before-end
 * event); the manager runs them, UNDONE through IN_PROGRESS to DONE or ERROR.
 */
export const EVENT_STATUSES = ['UNDONE', 'IN_PROGRESS', 'DONE', 'ERROR'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const EVENT_TYPES = ['start_lease', 'before_end_lease', 'end_lease'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Retry delay after a failed attempt: doubling from `baseMs`, at most 5 minutes. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempt - 1), 300_000);
}
