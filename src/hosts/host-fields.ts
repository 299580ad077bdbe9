/**
 * Splits a host request body into inventory fields and extra capabilities, pure.
 * Inventory keys accept numbers or numeric strings, so `blazar host-create --extra
 * vcpus=8` works; every other key is an extra capability with a string value.
 */
import { InvalidInput } from '../common/errors.js';
import { checkLength } from '../common/storable.js';
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

function toCount(key: string, value: unknown): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 2_147_483_647) {
    throw new InvalidInput(
      `Malformed parameter ${key}: must be a whole number`,
      'MalformedParameter',
    );
  }
  return n;
}

function toText(key: string, value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'string') {
    throw new InvalidInput(`Malformed parameter ${key}: must be a string`, 'MalformedParameter');
  }
  return value;
}

export function toBoolean(key: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value))
    return value.toLowerCase() === 'true';
  throw new InvalidInput(`Malformed parameter ${key}: must be true or false`, 'MalformedParameter');
}

export function checkCapabilityKey(key: string): void {
  if (key.length > MAX_CAPABILITY_KEY) {
    throw new InvalidInput('Extra capability key too long', 'ExtraCapabilityTooLong');
  }
  if (!/^[A-Za-z0-9_.:-]+$/.test(key) || key === '__proto__') {
    throw new InvalidInput(
      `Malformed parameter ${key}: capability names use letters, digits, _ . : -`,
      'MalformedParameter',
    );
  }
}

/** `skip` are keys the caller handled already (name, id). */
export function splitHostFields(body: Record<string, unknown>, skip: string[]): HostFields {
  const fields: HostFields = { inventory: {}, capabilities: {} };
  for (const [key, value] of Object.entries(body)) {
    if (skip.includes(key)) continue;
    // Own keys only: `constructor` or `toString` are capability names, not fields.
    if (Object.hasOwn(NUMBER_FIELDS, key)) {
      fields.inventory[NUMBER_FIELDS[key as keyof typeof NUMBER_FIELDS]] = toCount(key, value);
    } else if (Object.hasOwn(TEXT_FIELDS, key)) {
      const text = toText(key, value);
      const max = TEXT_LIMITS[key as keyof typeof TEXT_FIELDS];
      if (max !== undefined) checkLength(key, text, max);
      fields.inventory[TEXT_FIELDS[key as keyof typeof TEXT_FIELDS]] = text;
    } else if (key === 'reservable') {
      fields.reservable = toBoolean(key, value);
    } else if (RESERVED_KEYS.has(key)) {
      throw new InvalidInput(`${key} cannot be set`, 'CantUpdateParameter');
    } else {
      checkCapabilityKey(key);
      fields.capabilities[key] = toText(key, value);
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
