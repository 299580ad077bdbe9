import type { StoredUserEvent } from '../model/lease.entity.js';
/** What an import writes into Climate: its rows, as mapped from a Blazar database. */
import type { JsonObject } from '../common/json.js';
import type {
  KeptAllocation,
  KeptFloatingIp,
} from '../plugins/virtual-floatingip/floatingips.repository.js';

export interface HostRow {
  id: number;
  hypervisor_hostname: string;
  service_name: string;
  vcpus: number;
  memory_mb: number;
  local_gb: number;
  hypervisor_type: string;
  hypervisor_version: number;
  cpu_info: string;
  availability_zone: string;
  reservable: boolean;
  /** Blazar only ever took a host out on a failure report: Climate puts it back on one. */
  reported_down: boolean;
  capabilities: Record<string, string>;
  trust_id: string | null;
  created_at: string;
  updated_at: string | null;
}

export interface PropertyRow {
  property_name: string;
  private: boolean;
  created_at: string;
  updated_at: string | null;
}

export interface LeaseRow {
  id: string;
  name: string;
  project_id: string;
  user_id: string;
  start_at: string;
  end_at: string;
  status: string;
  degraded: boolean;
  trust_id: string | null;
  /** Blazar's user-defined events (the CLI's --event): kept, shown, never run. */
  user_events: StoredUserEvent[] | null;
  created_at: string;
  updated_at: string | null;
}

export interface ReservationRow {
  id: string;
  lease_id: string;
  resource_type: string;
  resource_id: string | null;
  status: string;
  missing_resources: boolean;
  resources_changed: boolean;
  params: JsonObject;
  created_at: string;
  updated_at: string | null;
}

export interface EventRow {
  id: string;
  lease_id: string;
  event_type: string;
  time: string;
  status: string;
  created_at: string;
  updated_at: string | null;
}

/** A whole-host allocation; `start`/`end` already include the cleaning time. */
export interface HostAllocationRow {
  id: string;
  reservation_id: string;
  host_id: number;
  start: string;
  end: string;
}

/** Blazar's one row per instance slot, as Climate keeps them: one row per host. */
export interface InstanceAllocationRow extends HostAllocationRow {
  slots: number;
  vcpus: number;
  memory_mb: number;
  disk_gb: number;
}

/** One lease with everything that hangs off it. */
export interface LeasePlan {
  lease: LeaseRow;
  reservations: ReservationRow[];
  events: EventRow[];
  hostAllocations: HostAllocationRow[];
  instanceAllocations: InstanceAllocationRow[];
  floatingIpAllocations: KeptAllocation[];
}

export interface ImportPlan {
  hosts: HostRow[];
  properties: PropertyRow[];
  leases: LeasePlan[];
  /** Blazar's registered floating IPs, ids kept. */
  floatingIps: KeptFloatingIp[];
  /** Every reason the import cannot go ahead; nothing is written while there is one. */
  problems: string[];
  /** What is left out or changed on the way, said so the operator knows. */
  notes: string[];
}

/** Blazar's naive UTC DATETIME text as ISO 8601 (`2029-12-01T08:00:00.000Z`). */
export function utc(value: string): string {
  const date = new Date(`${value.replace(' ', 'T')}Z`);
  if (Number.isNaN(date.getTime())) throw new Error(`not a date: ${value}`);
  return date.toISOString();
}

export function utcOrNull(value: string | null): string | null {
  return value === null ? null : utc(value);
}

export function plusMinutes(iso: string, minutes: number): string {
  return new Date(new Date(iso).getTime() + minutes * 60_000).toISOString();
}

export function flag(value: string | null): boolean {
  return value !== null && value !== '0' && value.toLowerCase() !== 'false';
}

export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
