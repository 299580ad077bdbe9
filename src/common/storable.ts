/**
 * What PostgreSQL can store, pure: text and jsonb take no NUL character, jsonb refuses a
 * lone UTF-16 surrogate (text silently mangles it), and varchar(n) counts code points.
 */
import { InvalidInput } from './errors.js';

/** Deeper than any request shape (requirements nest inside strings, not here). */
export const MAX_JSON_DEPTH = 32;

export const LONE_SURROGATE =
  /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string cannot be stored, or null when it can. */
export function badText(value: string): string | null {
  if (value.includes('\u0000')) return 'contains a NUL character';
  if (LONE_SURROGATE.test(value)) return 'is not valid Unicode';
  return null;
}

/** Length as PostgreSQL counts it for varchar(n): code points, not UTF-16 units. */
export function characters(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** A 400 naming the field when a string is longer than its column, varchar(max). */
export function checkLength(field: string, value: string, max: number): void {
  const problem = lengthProblem(field, value, max);
  if (problem !== null) throw problem;
}

/** The error checkLength throws, or null when `value` fits. */
export function lengthProblem(field: string, value: string, max: number): InvalidInput | null {
  return characters(value) > max
    ? new InvalidInput(
        `Malformed parameter ${field}: at most ${max} characters`,
        'MalformedParameter',
      )
    : null;
}

/**
 * The first problem in a decoded JSON value, keys included, as a sentence that starts
 * with `where`; null when there is none. Iterative, so hostile nesting cannot exhaust
 * the stack.
 */
export function findBadInput(
  root: unknown,
  where: string,
  maxDepth = MAX_JSON_DEPTH,
): string | null {
  const stack: { value: unknown; field: string; depth: number }[] = [
    { value: root, field: '', depth: 0 },
  ];
  const at = (field: string) => (field === '' ? where : `${where}: ${field}`);
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { value, field, depth } = next;
    if (typeof value === 'string') {
      const problem = badText(value);
      if (problem !== null) return `${at(field)} ${problem}`;
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= maxDepth) return `${at(field)} is nested more than ${maxDepth} levels`;
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      const problem = badText(key);
      if (problem !== null)
        return `${where}: a key${field === '' ? '' : ` in ${field}`} ${problem}`;
      const path = field === '' ? key : `${field}.${key}`;
      stack.push({ value: item, field: path.slice(0, 80), depth: depth + 1 });
    }
  }
  return null;
}

/** Throws the 400 for the first unstorable string in a decoded JSON value. */
export function assertStorable(value: unknown, where: string): void {
  const problem = findBadInput(value, where);
  if (problem !== null) {
    throw new InvalidInput(
      problem.charAt(0).toUpperCase() + problem.slice(1),
      'MalformedParameter',
    );
  }
}
