/** Validation of `flavor:instance` parameters and the sizing of its flavor, pure. */
import { InvalidInput, MissingParameter } from '../../common/errors.js';
import type { SourceFlavor } from '../../compute/compute-driver.js';
import type { JsonObject } from '../../common/json.js';
import { parseAffinity, type InstanceParams } from '../virtual-instance/instance-params.js';

/** The reservation flavor the tenant boots with: the source flavor's size and specs. */
export interface ReservationFlavor {
  vcpus: number;
  ram_mb: number;
  disk_gb: number;
  ephemeral_gb: number;
  swap_mb: number;
  extra_specs: Record<string, string>;
}

/**
 * Stored parameters. The `virtual:instance` keys are the slot as it is counted on a host
 * (so slots, their moves and healing are virtual:instance's own): `vcpus`, `memory_mb`,
 * `disk_gb` are what Placement charges per server, and `resource_properties` the hosts
 * the flavor's traits allow ('' when it names none).
 */
export interface FlavorParams extends InstanceParams {
  /** The flavor as Nova showed it at create; Blazar shows it in resource_properties. */
  source_flavor: JsonObject;
  reservation_flavor: ReservationFlavor;
}

/** What the source flavor asks of a host per server. */
export interface FlavorSize {
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
  required: string[];
  forbidden: string[];
}

const KNOWN = new Set(['flavor_id', 'amount', 'affinity', 'resource_properties']);
const MAX_INT = 2_147_483_647;
const WHOLE = /^\s*\d+\s*$/;
/** Resource classes Climate counts on its hosts; others are left to Placement. */
const COUNTED = new Set(['VCPU', 'PCPU', 'MEMORY_MB', 'DISK_GB']);
/** Hosts named in a trait filter at most (the requirement language's limit is 256 terms). */
export const MAX_TRAIT_HOSTS = 250;

export interface FlavorRequest {
  flavorId: string;
  amount: number;
  affinity: boolean | null;
}

/** The request's own keys; `resource_properties` is accepted and ignored, as Blazar does. */
export function validateFlavorRequest(values: Record<string, unknown>): FlavorRequest {
  const unknown = Object.keys(values).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    throw new InvalidInput(`Unknown parameter ${unknown.join(', ')} for flavor:instance`);
  }
  const missing = ['amount', 'flavor_id'].filter((k) => values[k] === undefined);
  if (missing.length > 0) throw new MissingParameter(missing.join(','));
  // The blazar CLI sends a numeric flavor id as a number.
  const id = values.flavor_id;
  const flavorId = typeof id === 'number' && Number.isInteger(id) ? String(id) : id;
  if (typeof flavorId !== 'string' || flavorId.trim() === '' || flavorId.length > 255) {
    throw new InvalidInput('Malformed parameter flavor_id', 'MalformedParameter');
  }
  const raw = values.amount;
  const amount = typeof raw === 'string' && WHOLE.test(raw) ? Number(raw) : raw;
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1 || amount > MAX_INT) {
    throw new InvalidInput('Malformed parameter amount', 'MalformedParameter');
  }
  return { flavorId, amount, affinity: parseAffinity(values.affinity) };
}

/**
 * What a server of the flavor takes from its host, as Nova asks Placement: VCPU (PCPU
 * with `hw:cpu_policy=dedicated`), MEMORY_MB, DISK_GB = root + ephemeral + swap (rounded
 * up to GB), `resources:<class>` overriding those; `trait:<name>=required|forbidden`. A
 * dedicated CPU is counted as `cpuRatio` vCPUs: a whole core of the host's shared ones.
 */
export function sizeFlavor(f: SourceFlavor, cpuRatio: number): FlavorSize {
  const specs = f.extraSpecs;
  if (specs['aggregate_instance_extra_specs:reservation'] !== undefined) {
    throw new InvalidInput(`Flavor ${f.id} is a reservation's own flavor`, 'MalformedParameter');
  }
  const dedicated = specs['hw:cpu_policy'] === 'dedicated';
  const amounts: Record<string, number> = {
    VCPU: dedicated ? 0 : f.vcpus,
    PCPU: dedicated ? f.vcpus : 0,
    MEMORY_MB: f.ramMb,
    DISK_GB: f.diskGb + f.ephemeralGb + Math.ceil(f.swapMb / 1024),
  };
  const required: string[] = [];
  const forbidden: string[] = [];
  for (const [key, value] of Object.entries(specs)) {
    if (key.startsWith('resources:')) {
      const rc = key.slice('resources:'.length);
      if (!WHOLE.test(value)) {
        throw new InvalidInput(`Invalid value for ${key} of flavor ${f.id}`, 'MalformedParameter');
      }
      if (COUNTED.has(rc)) amounts[rc] = Number(value);
    } else if (key.startsWith('trait:')) {
      const trait = key.slice('trait:'.length);
      if (value === 'required') required.push(trait);
      else if (value === 'forbidden') forbidden.push(trait);
      else throw new InvalidInput(`Invalid value for trait ${trait}`, 'MalformedParameter');
    }
  }
  const vcpus = amounts.VCPU + Math.ceil(amounts.PCPU * cpuRatio);
  if (vcpus < 1 || amounts.MEMORY_MB < 1) {
    throw new InvalidInput(
      `Flavor ${f.id} asks for no CPU or no memory; reserve whole hosts with physical:host`,
      'MalformedParameter',
    );
  }
  return { vcpus, memory_mb: amounts.MEMORY_MB, disk_gb: amounts.DISK_GB, required, forbidden };
}

/** The hosts a trait filter allows, as a requirement on their names ('' for any host). */
export function hostsRequirement(hosts: string[] | null): string {
  if (hosts === null) return '';
  if (hosts.length > MAX_TRAIT_HOSTS) {
    throw new InvalidInput(
      `The flavor's traits allow ${hosts.length} hosts; a flavor:instance reservation ` +
        `can name at most ${MAX_TRAIT_HOSTS}`,
      'MalformedParameter',
    );
  }
  return JSON.stringify(['in', '$hypervisor_hostname', ...hosts]);
}

/** The stored parameters of a reservation of `request` by flavor `f`. */
export function flavorParams(
  request: FlavorRequest,
  f: SourceFlavor,
  size: FlavorSize,
  hostsAllowed: string,
): FlavorParams {
  return {
    vcpus: size.vcpus,
    memory_mb: size.memory_mb,
    disk_gb: size.disk_gb,
    amount: request.amount,
    affinity: request.affinity,
    resource_properties: hostsAllowed,
    server_id: null,
    server_group_id: null,
    aggregate_id: null,
    source_flavor: f.shown,
    reservation_flavor: {
      vcpus: f.vcpus,
      ram_mb: f.ramMb,
      disk_gb: f.diskGb,
      ephemeral_gb: f.ephemeralGb,
      swap_mb: f.swapMb,
      extra_specs: f.extraSpecs,
    },
  };
}

export function asFlavorParams(stored: JsonObject): FlavorParams {
  return stored as unknown as FlavorParams;
}
