/** Event statuses and types, and the retry delay. The manager is the only writer of events. */
export const EVENT_STATUSES = ['UNDONE', 'IN_PROGRESS', 'DONE', 'ERROR'] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const EVENT_TYPES = ['start_lease', 'before_end_lease', 'end_lease'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Retry delay after a failed attempt: doubling from `baseMs`, at most 5 minutes. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempt - 1), 300_000);
}
