/** Wire dates are UTC without an offset ("2030-01-01T10:00:00.000000"). */
export function parseWire(text: string): Date {
  const iso = text.includes('T') ? text : text.replace(' ', 'T');
  return new Date(/[zZ]|[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso.slice(0, 23)}Z`);
}

const pad = (n: number) => String(n).padStart(2, '0');

/** The API's input format, "YYYY-MM-DD HH:MM" (UTC). */
export function toInput(d: Date): string {
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
  );
}

/** For people: "2030-01-01 10:00 UTC". */
export function show(d: Date): string {
  return `${toInput(d)} UTC`;
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
