/**
 * What Climate already holds of an import, read back in the plan's own shape, and the
 * comparison of the two: a second run writes only what is missing, refuses what differs,
 * and --verify reports both.
 */
import type { EntityManager } from 'typeorm';
import { propertyRecords } from '../hosts/host-properties.service.js';
import { leaseRecords } from '../model/lease-tables.js';
import { usageWithLeases } from '../pools/host-usage.js';
import { hostRecords } from '../pools/hosts.repository.js';
import { FloatingIpsRepository } from '../plugins/virtual-floatingip/floatingips.repository.js';
import type { Usage } from './checks.js';
import type { FloatingIpUse } from './map-floatingips.js';
import type { HostRow, ImportPlan, LeasePlan, PropertyRow } from './plan.js';

export interface Existing {
  hosts: Map<number, HostRow>;
  hostNames: Map<string, number>;
  properties: Map<string, PropertyRow>;
  leases: Map<string, LeasePlan>;
  /** Allocations in Climate of reservations the import does not bring. */
  otherUsage: Usage[];
  /** Floating-IP allocations in Climate of reservations the import does not bring. */
  otherFloatingIpUsage: FloatingIpUse[];
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export async function loadExisting(em: EntityManager, plan: ImportPlan): Promise<Existing> {
  const hostRows = await hostRecords<HostRow & { created_at: Date; updated_at: Date | null }>(em);
  const hosts = new Map<number, HostRow>();
  const hostNames = new Map<string, number>();
  for (const h of hostRows) {
    hosts.set(h.id, {
      ...h,
      created_at: h.created_at.toISOString(),
      updated_at: iso(h.updated_at),
    });
    hostNames.set(h.hypervisor_hostname, h.id);
  }
  const properties = new Map(
    (await propertyRecords(em)).map((p) => [
      p.property_name,
      { ...p, created_at: p.created_at.toISOString(), updated_at: iso(p.updated_at) },
    ]),
  );
  const ids = plan.leases.map((l) => l.lease.id);
  const leases = new Map<string, LeasePlan>();
  const rows = await leaseRecords(em, ids);
  for (const l of rows.leases) {
    leases.set(String(l.id), {
      lease: dated(l, [
        'start_at',
        'end_at',
        'created_at',
        'updated_at',
      ]) as unknown as LeasePlan['lease'],
      reservations: [],
      events: [],
      hostAllocations: [],
      instanceAllocations: [],
      floatingIpAllocations: [],
    });
  }
  const leaseOf = new Map<string, string>();
  for (const r of rows.reservations) {
    leaseOf.set(String(r.id), String(r.lease_id));
    leases
      .get(String(r.lease_id))
      ?.reservations.push(dated(r, ['created_at', 'updated_at']) as never);
  }
  for (const e of rows.events) {
    leases
      .get(String(e.lease_id))
      ?.events.push(dated(e, ['time', 'created_at', 'updated_at']) as never);
  }
  const otherUsage: Usage[] = [];
  for (const a of await usageWithLeases(em)) {
    const owner = leases.get(leaseOf.get(a.reservation_id) ?? '');
    const row = {
      id: a.id,
      reservation_id: a.reservation_id,
      host_id: a.host_id,
      start: a.lo.toISOString(),
      end: a.up.toISOString(),
    };
    if (owner !== undefined) {
      if (a.slots === null) owner.hostAllocations.push(row);
      else
        owner.instanceAllocations.push({
          ...row,
          slots: a.slots,
          vcpus: a.vcpus,
          memory_mb: a.memory_mb,
          disk_gb: a.disk_gb,
        });
      continue;
    }
    otherUsage.push({
      hostId: a.host_id,
      reservationId: a.reservation_id,
      lease: `${a.lease}, already in Climate`,
      start: a.lo.toISOString(),
      end: a.up.toISOString(),
      slots:
        a.slots === null
          ? null
          : {
              vcpus: a.slots * a.vcpus,
              memory_mb: a.slots * a.memory_mb,
              disk_gb: a.slots * a.disk_gb,
            },
    });
  }
  const otherFloatingIpUsage: FloatingIpUse[] = [];
  for (const { lease, ...a } of await new FloatingIpsRepository().allAllocations(em)) {
    const owner = leases.get(leaseOf.get(a.reservation_id) ?? '');
    if (owner !== undefined) owner.floatingIpAllocations.push(a);
    else otherFloatingIpUsage.push({ ...a, lease: `${lease}, already in Climate` });
  }
  return { hosts, hostNames, properties, leases, otherUsage, otherFloatingIpUsage };
}

function dated(row: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out = { ...row };
  for (const k of keys) out[k] = iso(row[k] as Date | null);
  return out;
}

/** A lease in a canonical order, so two readings of the same rows compare equal. */
function canonical(l: LeasePlan): unknown {
  const byId = <T extends { id: string }>(rows: T[]) =>
    [...rows].sort((a, b) => a.id.localeCompare(b.id));
  return {
    lease: sortKeys(l.lease),
    reservations: byId(l.reservations).map(sortKeys),
    events: byId(l.events).map(sortKeys),
    hostAllocations: byId(l.hostAllocations).map(sortKeys),
    instanceAllocations: byId(l.instanceAllocations).map(sortKeys),
    floatingIpAllocations: byId(l.floatingIpAllocations).map(sortKeys),
  };
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
  );
}

/** Where two values differ, as paths (`reservations[0].status: "active" ≠ "error"`). */
export function differences(expected: unknown, actual: unknown, path = ''): string[] {
  if (JSON.stringify(expected) === JSON.stringify(actual)) return [];
  if (Array.isArray(expected) && Array.isArray(actual) && expected.length === actual.length) {
    return expected.flatMap((e, i) => differences(e, actual[i], `${path}[${i}]`));
  }
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObject(expected) && isObject(actual)) {
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(e), ...Object.keys(a)])];
    return keys.flatMap((k) => differences(e[k], a[k], path === '' ? k : `${path}.${k}`));
  }
  return [`${path}: Blazar ${JSON.stringify(expected)}, Climate ${JSON.stringify(actual)}`];
}

export function compareLease(source: LeasePlan, climate: LeasePlan): string[] {
  return differences(canonical(source), canonical(climate));
}

export function compareHost(source: HostRow, climate: HostRow): string[] {
  return differences(sortKeys(source), sortKeys(climate));
}
