/** node-postgres's own mapping of a bound value to its wire text (arrays, dates, JSON). */
declare module 'pg/lib/utils' {
  export function prepareValue(value: unknown): unknown;
}
