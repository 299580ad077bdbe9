import { canEventTransition, EVENT_STATUSES, eventTypeRank, retryDelayMs } from './event-status.js';
import {
  canReservationTransition,
  RESERVATION_STATUSES,
} from '../reservations/reservation-status.js';

describe('event transitions', () => {
  const allowed = new Set([
    'UNDONE>IN_PROGRESS',
    'IN_PROGRESS>DONE',
    'IN_PROGRESS>ERROR',
    'IN_PROGRESS>UNDONE',
    'DONE>UNDONE',
  ]);
  const cases = EVENT_STATUSES.flatMap((f) => EVENT_STATUSES.map((t) => [f, t] as const));
  it.each(cases)('should allow %s -> %s only when listed', (from, to) => {
    expect(canEventTransition(from, to)).toBe(allowed.has(`${from}>${to}`));
  });

  it('should rank a start before a before-end before an end', () => {
    expect(eventTypeRank('start_lease')).toBeLessThan(eventTypeRank('before_end_lease'));
    expect(eventTypeRank('before_end_lease')).toBeLessThan(eventTypeRank('end_lease'));
  });

  it.each([
    [1, 1000, 1000],
    [2, 1000, 2000],
    [4, 1000, 8000],
    [30, 1000, 300_000],
  ])('should wait attempt %i with base %i for %i ms', (attempt, base, expected) => {
    expect(retryDelayMs(attempt, base)).toBe(expected);
  });
});

describe('reservation transitions', () => {
  const allowed = new Set([
    'pending>active',
    'pending>deleted',
    'pending>error',
    'active>deleted',
    'active>error',
    'error>deleted',
  ]);
  const cases = RESERVATION_STATUSES.flatMap((f) =>
    RESERVATION_STATUSES.map((t) => [f, t] as const),
  );
  it.each(cases)('should allow %s -> %s only when listed', (from, to) => {
    expect(canReservationTransition(from, to)).toBe(allowed.has(`${from}>${to}`));
  });
});
