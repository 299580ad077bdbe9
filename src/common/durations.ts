import { InvalidInput } from './errors.js';

const UNITS: Record<string, number> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** Ten thousand years: longer spans end after every date Climate takes. */
export const MAX_DURATION_MS = 3_652_500 * UNITS.d;

/** `90s`, `30m`, `2h`, `1d`, `1w` (the client's duration style), or plain seconds. */
export function parseDuration(name: string, value: unknown): number {
  const text = typeof value === 'string' ? value.trim() : '';
  const m = /^(\d+)([smhdw]?)$/.exec(text);
  const ms = m ? Number(m[1]) * UNITS[m[2] || 's'] : NaN;
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new InvalidInput(`${name} must be a duration such as 90s, 30m, 2h or 1d`);
  }
  if (ms > MAX_DURATION_MS) throw new InvalidInput(`${name} must be at most 3652500d`);
  return ms;
}
