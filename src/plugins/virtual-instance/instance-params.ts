/** Validation of `virtual:instance` reservation parameters, pure. */
import { InvalidInput, MissingParameter } from '../../common/errors.js';
import { characters } from '../../common/storable.js';
import type { JsonObject } from '../../common/json.js';
import { requirementText } from '../physical-host/host-params.js';

export interface InstanceParams {
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
  amount: number;
  affinity: boolean | null;
  resource_properties: string;
  /** An existing (shelved) server this reservation is for: the Climate flow. */
  server_id: string | null;
  /** Made with the lease (as Blazar), or at the start (the builtin driver's aggregate). */
  server_group_id: string | null;
  aggregate_id: number | null;
  /** Groups made for an affinity an update changed before the start: deleted then. */
  retired_server_group_ids?: string[];
}

const SIZE_KEYS = ['vcpus', 'memory_mb', 'disk_gb', 'amount'] as const;
const KNOWN = new Set([...SIZE_KEYS, 'affinity', 'resource_properties', 'resource_id']);
const MAX_INT = 2_147_483_647;
export const MAX_SERVER_ID = 255;

function whole(name: string, value: unknown, min: number): number {
  if (value === undefined || value === null) throw new MissingParameter(name);
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > MAX_INT) {
    throw new InvalidInput(`Malformed parameter ${name}`, 'MalformedParameter');
  }
  return n;
}

/** true / false / null, also as the strings the client sends ("True", "False", "None"). */
export function parseAffinity(value: unknown): boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const v = value.trim().toLowerCase();
    if (v === 'true') return true;
    if (v === 'false') return false;
    if (v === 'none' || v === 'null' || v === '') return null;
  }
  throw new InvalidInput('Malformed parameter affinity', 'MalformedParameter');
}

/** A server's size, for a reservation of an existing server (`resource_id`). */
export interface ServerSize {
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
}

export function validateInstanceParams(
  values: Record<string, unknown>,
  server: ServerSize | null = null,
): InstanceParams {
  const unknown = Object.keys(values).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new InvalidInput(`Unknown parameter ${unknown.join(', ')} for virtual:instance`);
  }
  const resourceProperties = requirementText('resource_properties', values.resource_properties);
  const serverId = values.resource_id;
  // A server id is at most as long as the claims' server_id column.
  if (
    serverId !== undefined &&
    serverId !== null &&
    (typeof serverId !== 'string' || serverId === '' || characters(serverId) > MAX_SERVER_ID)
  ) {
    throw new InvalidInput('Malformed parameter resource_id', 'MalformedParameter');
  }
  // One existing server: one slot of its own size, unless the caller says otherwise.
  const sized = { ...(server ?? {}), amount: 1, ...values };
  return {
    vcpus: whole('vcpus', sized.vcpus, 1),
    memory_mb: whole('memory_mb', sized.memory_mb, 1),
    disk_gb: whole('disk_gb', sized.disk_gb, 0),
    amount: server === null ? whole('amount', values.amount, 1) : 1,
    affinity: parseAffinity(values.affinity),
    resource_properties: resourceProperties,
    server_id: typeof serverId === 'string' ? serverId : null,
    server_group_id: null,
    aggregate_id: null,
  };
}

export function asInstanceParams(stored: JsonObject): InstanceParams {
  return stored as InstanceParams;
}
