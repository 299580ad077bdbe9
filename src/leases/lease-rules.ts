/** Rules for creating, updating and deleting leases (Blazar's checks and messages), pure. */
import { InvalidInput, PreconditionFailed } from '../common/errors.js';
import { truncateToMinute } from '../common/dates.js';

export interface LeaseWindow {
  start: Date;
  end: Date;
}

/** A new lease may not start in the past (minute precision) and must end after it starts. */
export function checkNewWindow({ start, end }: LeaseWindow, now: Date): void {
  if (start < truncateToMinute(now)) {
    throw new InvalidInput('Start date must be later than current date');
  }
  if (end <= start) throw new InvalidInput('End date must be later than start date.');
}

/**
 * When the before-end event fires: the requested time, strictly inside the lease; else
 * `minutes` before the end, clamped to the start; none when `minutes` is 0.
 */
export function beforeEndTime(
  window: LeaseWindow,
  requested: Date | null,
  minutes: number,
): Date | null {
  if (requested !== null) {
    if (requested <= window.start || requested >= window.end) {
      throw new InvalidInput('Datetime is out of lease limits', 'InvalidPeriod');
    }
    return requested;
  }
  if (minutes <= 0) return null;
  const at = new Date(window.end.getTime() - minutes * 60_000);
  return at < window.start ? window.start : at;
}

export interface DateChange {
  current: LeaseWindow;
  start?: Date;
  end?: Date;
  started: boolean;
  ended: boolean;
  now: Date;
}

/** The lease's window after an update, or a 400 with Blazar's message. */
export function planDateChange(change: DateChange): LeaseWindow {
  const { current, started, ended } = change;
  const now = truncateToMinute(change.now);
  const start = change.start ?? current.start;
  const end = change.end ?? current.end;
  const startMoved = start.getTime() !== current.start.getTime();
  const endMoved = end.getTime() !== current.end.getTime();
  if (!startMoved && !endMoved) return current;
  if (ended) throw new InvalidInput('Terminated leases can only be renamed');
  if (started && startMoved) {
    throw new InvalidInput('Cannot modify the start date of already started leases');
  }
  if (!started && startMoved && start < now) {
    throw new InvalidInput('Start date must be later than current date');
  }
  if (end < now || end <= start) {
    throw new InvalidInput('End date must be later than current and start date');
  }
  return { start, end };
}

/** Keeps the before-end event the same distance from the end, clamped to the start. */
export function shiftBeforeEnd(previous: Date, oldEnd: Date, next: LeaseWindow): Date {
  const at = new Date(next.end.getTime() - (oldEnd.getTime() - previous.getTime()));
  if (at < next.start) return next.start;
  return at >= next.end ? next.start : at;
}

/** If-Match carries the version from the ETag: `"3"`, `W/"3"` or `3`; `*` matches any. */
export function checkVersion(
  lease: { id: string; version: number },
  ifMatch: string | undefined,
): void {
  if (ifMatch === undefined || ifMatch.trim() === '*') return;
  const wanted = ifMatch.split(',').map((v) => v.trim().replace(/^W\//, '').replace(/"/g, ''));
  if (!wanted.includes(String(lease.version))) {
    throw new PreconditionFailed(
      `Lease ${lease.id} has changed (now version ${lease.version}); fetch it and try again`,
    );
  }
}
