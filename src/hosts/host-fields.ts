/**
 * Splits a host request body into inventory fields and extra capabilities, pure.
 * Inventory keys accept numbers or numeric strings, so `blazar host-create --extra
 * vcpus=8` works; every other key is an extra capability with a string value.
 */
import { InvalidInput } from '../common/errors.js';
import { lengthProblem } from '../common/storable.js';
import type { HostInventory } from '../compute/compute-driver.js';

const NUMBER_FIELDS = {
  vcpus: 'vcpus',
  memory_mb: 'memoryMb',
  local_gb: 'localGb',
  hypervisor_version: 'hypervisorVersion',
} as const;

const TEXT_FIELDS = {
  hypervisor_type: 'hypervisorType',
  cpu_info: 'cpuInfo',
  availability_zone: 'availabilityZone',
  service_name: 'serviceName',
} as const;

/** The hosts table's varchar sizes (cpu_info is text). */
export const MAX_HOST_TEXT = 255;
const TEXT_LIMITS: Partial<Record<keyof typeof TEXT_FIELDS, number>> = {
  hypervisor_type: MAX_HOST_TEXT,
  availability_zone: MAX_HOST_TEXT,
  service_name: MAX_HOST_TEXT,
};

/** Keys of the host object that capabilities may not shadow. */
export const RESERVED_KEYS = new Set([
  'id',
  'name',
  'hypervisor_hostname',
  'status',
  'reservable',
  'trust_id',
  'created_at',
  'updated_at',
  'pool',
  ...Object.keys(NUMBER_FIELDS),
  ...Object.keys(TEXT_FIELDS),
]);

export const MAX_CAPABILITY_KEY = 64;

export type InventoryPatch = Partial<Omit<HostInventory, 'hypervisorHostname'>>;

export interface HostFields {
  inventory: InventoryPatch;
  capabilities: Record<string, string>;
  reservable?: boolean;
}

/** Inventory counts: a whole number (or numeric string) that fits an integer column. */
function countOf(value: unknown): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 2_147_483_647 ? n : null;
}

function malformed(key: string, why: string): InvalidInput {
  return new InvalidInput(`Malformed parameter ${key}: ${why}`, 'MalformedParameter');
}

function textProblem(key: string, value: unknown): InvalidInput | null {
  if (typeof value === 'number' || typeof value === 'boolean') return null;
  return typeof value === 'string' ? null : malformed(key, 'must be a string');
}

/** Why `value` is not true or false (a boolean, or its name in any case), or null. */
export function booleanProblem(key: string, value: unknown): InvalidInput | null {
  if (typeof value === 'boolean') return null;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return null;
  return malformed(key, 'must be true or false');
}

export function toBoolean(key: string, value: unknown): boolean {
  const problem = booleanProblem(key, value);
  if (problem !== null) throw problem;
  return typeof value === 'boolean' ? value : String(value).toLowerCase() === 'true';
}

function capabilityKeyProblem(key: string): InvalidInput | null {
  if (key.length > MAX_CAPABILITY_KEY) {
    return new InvalidInput('Extra capability key too long', 'ExtraCapabilityTooLong');
  }
  if (!/^[A-Za-z0-9_.:-]+$/.test(key) || key === '__proto__') {
    return malformed(key, 'capability names use letters, digits, _ . : -');
  }
  return null;
}

export function checkCapabilityKey(key: string): void {
  const problem = capabilityKeyProblem(key);
  if (problem !== null) throw problem;
}

/** Why a host body's `key` cannot take `value`, or null. Own keys only, as in splitHostFields. */
export function hostFieldProblem(key: string, value: unknown): InvalidInput | null {
  if (Object.hasOwn(NUMBER_FIELDS, key)) {
    return countOf(value) === null ? malformed(key, 'must be a whole number') : null;
  }
  if (Object.hasOwn(TEXT_FIELDS, key)) {
    const max = TEXT_LIMITS[key as keyof typeof TEXT_FIELDS];
    const problem = textProblem(key, value);
    return problem ?? (max === undefined ? null : lengthProblem(key, String(value), max));
  }
  if (key === 'reservable') return booleanProblem(key, value);
  if (RESERVED_KEYS.has(key))
    return new InvalidInput(`${key} cannot be set`, 'CantUpdateParameter');
  return capabilityKeyProblem(key) ?? textProblem(key, value);
}

/**
 * `skip` are keys the caller handled already (name, id). Throws the first problem
 * (hostFieldProblem); the request classes check the same before the service is called.
 */
export function splitHostFields(body: Record<string, unknown>, skip: string[]): HostFields {
  const fields: HostFields = { inventory: {}, capabilities: {} };
  for (const [key, value] of Object.entries(body)) {
    if (skip.includes(key)) continue;
    const problem = hostFieldProblem(key, value);
    if (problem !== null) throw problem;
    // Own keys only: `constructor` or `toString` are capability names, not fields.
    if (Object.hasOwn(NUMBER_FIELDS, key)) {
      fields.inventory[NUMBER_FIELDS[key as keyof typeof NUMBER_FIELDS]] = countOf(value) as number;
    } else if (Object.hasOwn(TEXT_FIELDS, key)) {
      fields.inventory[TEXT_FIELDS[key as keyof typeof TEXT_FIELDS]] = String(value);
    } else if (key === 'reservable') {
      fields.reservable = toBoolean(key, value);
    } else {
      fields.capabilities[key] = String(value);
    }
  }
  return fields;
}

/** Inventory for a new host under the builtin driver: what the request says, else zero. */
export function builtinInventory(name: string, patch: InventoryPatch): HostInventory {
  return {
    hypervisorHostname: name,
    serviceName: patch.serviceName ?? name,
    vcpus: patch.vcpus ?? 0,
    memoryMb: patch.memoryMb ?? 0,
    localGb: patch.localGb ?? 0,
    hypervisorType: patch.hypervisorType ?? 'builtin',
    hypervisorVersion: patch.hypervisorVersion ?? 0,
    cpuInfo: patch.cpuInfo ?? '',
    availabilityZone: patch.availabilityZone ?? 'nova',
  };
}
