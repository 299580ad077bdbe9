/**
 * Dates on the wire. In: "YYYY-MM-DD HH:MM" (UTC, single-digit fields allowed), "now", or
 * RFC 3339 with an offset. Out: "YYYY-MM-DDTHH:MM:SS.ffffff" (what the blazar CLI parses)
 * for lease/event dates, "YYYY-MM-DD HH:MM:SS" for created_at/updated_at.
 */
import { InvalidDate } from './errors.js';

const BLAZAR_FORMAT = /^(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2})$/;
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Every date given is before this (Blazar's four-digit years): lease ends, windows and the
 * searches built on them stay in range of JavaScript and PostgreSQL dates.
 */
export const LATEST_DATE = new Date(Date.UTC(10000, 0, 1));

export function truncateToMinute(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 60_000) * 60_000);
}

function validParts(y: number, mo: number, d: number, h: number, mi: number, s = 0): Date | null {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // Rejects 2050-02-30 and friends, which Date.UTC would roll over.
  if (date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return null;
  return date;
}

/** Parses an input date; `now` is the current time truncated to the minute, as in Blazar. */
export function parseInputDate(value: unknown, now: Date): Date {
  if (typeof value !== 'string') throw new InvalidDate(String(value));
  const text = value.trim();
  if (text === 'now') return truncateToMinute(now);
  let m = BLAZAR_FORMAT.exec(text);
  if (m) {
    const date = validParts(+m[1], +m[2], +m[3], +m[4], +m[5]);
    if (date) return date;
    throw new InvalidDate(value);
  }
  m = RFC3339.exec(text);
  if (m) {
    const base = validParts(+m[1], +m[2], +m[3], +m[4], +m[5], m[6] ? +m[6] : 0);
    if (base) {
      const fraction = m[7] ? Math.floor(Number(m[7]) * 1000) : 0;
      const offset = m[8].toUpperCase() === 'Z' ? 0 : offsetMinutes(m[8]);
      // 9999-12-31T23:00-02:00 is in the year 10000.
      const date = offset === null ? null : new Date(base.getTime() + fraction - offset * 60_000);
      if (date !== null && date < LATEST_DATE) return date;
    }
  }
  throw new InvalidDate(value);
}

function offsetMinutes(text: string): number | null {
  const sign = text.startsWith('-') ? -1 : 1;
  const [h, m] = text.slice(1).split(':').map(Number);
  if (h > 23 || m > 59) return null;
  return sign * (h * 60 + m);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function datePart(d: Date): string {
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

function timePart(d: Date): string {
  return `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** Lease, event and allocation dates: 2017-12-26T12:00:00.000000. */
export function formatWireDate(d: Date): string {
  return `${datePart(d)}T${timePart(d)}.${pad(d.getUTCMilliseconds(), 3)}000`;
}

/** created_at / updated_at: 2017-12-27 10:00:00. */
export function formatTimestamp(d: Date | null): string | null {
  return d === null ? null : `${datePart(d)} ${timePart(d)}`;
}
