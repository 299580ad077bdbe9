/** Validation of `physical:host` reservation parameters (Blazar's checks, plus ours), pure. */
import { InvalidInput, MissingParameter } from '../../common/errors.js';
import { characters, findBadInput } from '../../common/storable.js';
import type { JsonObject } from '../../common/json.js';
import { combine } from '../../requirements/host-query.js';

export const BEFORE_END = ['default', 'snapshot', ''] as const;
export const ON_END = ['release', 'recycle', 'shared'] as const;

export interface HostParams {
  min: number;
  max: number;
  hypervisor_properties: string;
  resource_properties: string;
  before_end: (typeof BEFORE_END)[number];
  on_end: (typeof ON_END)[number];
  affinity: string | null;
  anti_affinity: string | null;
  extra_projects: string[];
}

const KNOWN = new Set([
  'min',
  'max',
  'hypervisor_properties',
  'resource_properties',
  'before_end',
  'on_end',
  'affinity',
  'anti_affinity',
  'extra_projects',
]);

/** Host counts are compared with SQL integers: above that range is no count at all. */
const MAX_COUNT = 2_147_483_647;
/** A project id longer than the leases' project_id column names no project. */
const MAX_PROJECT_ID = 255;

function count(name: 'min' | 'max', value: unknown): number {
  if (value === undefined || value === null) throw new MissingParameter(name);
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n > MAX_COUNT) {
    throw new InvalidInput(`Malformed parameter ${name}`, 'MalformedParameter');
  }
  return n;
}

/**
 * A requirement query, checked (MalformedRequirements). Its values are compared in SQL,
 * so a NUL or a lone surrogate escaped inside the JSON text is refused here too.
 */
export function requirementText(name: string, value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // The parser bounds the nesting; only the strings are checked here.
  if (findBadInput(combine(text), name, Infinity) !== null) {
    throw new InvalidInput(
      `Malformed requirements ${text}: values must be valid Unicode without NUL characters`,
      'MalformedRequirements',
    );
  }
  return text;
}

function oneOf<T extends string>(
  name: string,
  value: unknown,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidInput(
      `Invalid ${name} ${JSON.stringify(value)}: must be one of ${allowed.map((a) => `"${a}"`).join(', ')}`,
    );
  }
  return value as T;
}

function level(name: string, value: unknown, levels: readonly string[]): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || !levels.includes(value)) {
    throw new InvalidInput(
      `Invalid ${name} ${JSON.stringify(value)}: must be a topology level (${levels.join(', ')})`,
    );
  }
  return value;
}

function projects(value: unknown): string[] {
  if (value === undefined || value === null || value === '') return [];
  const list = typeof value === 'string' ? value.split(/[\s,]+/) : value;
  if (
    !Array.isArray(list) ||
    !list.every((p) => typeof p === 'string' && p !== '' && characters(p) <= MAX_PROJECT_ID)
  ) {
    throw new InvalidInput('Malformed parameter extra_projects', 'MalformedParameter');
  }
  return list as string[];
}

/** Checks a full request (create) or the merge of stored params and changes (update). */
export function validateHostParams(
  values: Record<string, unknown>,
  levels: readonly string[],
): HostParams {
  const unknown = Object.keys(values).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new InvalidInput(`Unknown parameter ${unknown.join(', ')} for physical:host`);
  }
  const min = count('min', values.min);
  const max = count('max', values.max);
  if (min < 1 || max < 1) {
    throw new InvalidInput(
      'Malformed parameter min and max (must be greater than or equal to 1)',
      'MalformedParameter',
    );
  }
  if (max < min) {
    throw new InvalidInput(
      'Invalid values for min/max of hosts. Max must be equal to or larger than min.',
      'InvalidRange',
    );
  }
  const params: HostParams = {
    min,
    max,
    hypervisor_properties: requirementText('hypervisor_properties', values.hypervisor_properties),
    resource_properties: requirementText('resource_properties', values.resource_properties),
    before_end: oneOf('before_end', values.before_end, BEFORE_END, 'default'),
    on_end: oneOf('on_end', values.on_end, ON_END, 'release'),
    affinity: level('affinity', values.affinity, levels),
    anti_affinity: level('anti_affinity', values.anti_affinity, levels),
    extra_projects: projects(values.extra_projects),
  };
  if (params.affinity !== null && params.anti_affinity !== null) {
    throw new InvalidInput('Give affinity or anti_affinity, not both');
  }
  return params;
}

export function asHostParams(stored: JsonObject): HostParams {
  return stored as HostParams;
}
