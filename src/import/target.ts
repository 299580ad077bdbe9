/**
 * What Climate already holds of an import, read back in the plan's own shape, and the
 * comparison of the two: a second run writes only what is missing, refuses what differs,
 * and --verify reports both.
 */
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
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
  const hostRows = await sql<HostRow & { created_at: Date; updated_at: Date | null }>(
    em,
    `SELECT id, hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
            hypervisor_version, cpu_info, availability_zone, reservable, reported_down,
            capabilities, trust_id, created_at, updated_at FROM hosts`,
  );
  const hosts = new Map<number, HostRow>();
  const hostNames = new Map<string, number>();
  for (const h of hostRows.rows) {
    hosts.set(h.id, {
      ...h,
      created_at: h.created_at.toISOString(),
      updated_at: iso(h.updated_at),
    });
    hostNames.set(h.hypervisor_hostname, h.id);
  }
  const props = await sql<{
    property_name: string;
    private: boolean;
    created_at: Date;
    updated_at: Date | null;
  }>(
    em,
    `SELECT property_name, private, created_at, updated_at FROM resource_properties
      WHERE resource_type = 'physical:host'`,
  );
  const properties = new Map(
    props.rows.map((p) => [
      p.property_name,
      { ...p, created_at: p.created_at.toISOString(), updated_at: iso(p.updated_at) },
    ]),
  );
  const ids = plan.leases.map((l) => l.lease.id);
  const leases = new Map<string, LeasePlan>();
  const leaseRows = await sql<Record<string, unknown>>(
    em,
    `SELECT id, name, project_id, user_id, start_at, end_at, status, degraded, trust_id, created_at, updated_at,
            user_events
       FROM leases WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  for (const l of leaseRows.rows) {
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
  const reservations = await sql<Record<string, unknown>>(
    em,
    `SELECT id, lease_id, resource_type, resource_id, status, missing_resources, resources_changed,
            params, created_at, updated_at FROM reservations WHERE lease_id = ANY($1::uuid[])`,
    [ids],
  );
  const leaseOf = new Map<string, string>();
  for (const r of reservations.rows) {
    leaseOf.set(String(r.id), String(r.lease_id));
    leases
      .get(String(r.lease_id))
      ?.reservations.push(dated(r, ['created_at', 'updated_at']) as never);
  }
  const events = await sql<Record<string, unknown>>(
    em,
    `SELECT id, lease_id, event_type, time, status, created_at, updated_at
       FROM events WHERE lease_id = ANY($1::uuid[])`,
    [ids],
  );
  for (const e of events.rows) {
    leases
      .get(String(e.lease_id))
      ?.events.push(dated(e, ['time', 'created_at', 'updated_at']) as never);
  }
  const usage = await sql<{
    id: string;
    reservation_id: string;
    host_id: number;
    lo: Date;
    up: Date;
    slots: number | null;
    vcpus: number;
    memory_mb: number;
    disk_gb: number;
    lease: string;
  }>(
    em,
    `SELECT a.id, a.reservation_id, a.host_id, lower(a.during) AS lo, upper(a.during) AS up,
            a.slots, a.vcpus, a.memory_mb, a.disk_gb, 'lease ' || l.name || ' (' || l.id || ')' AS lease
       FROM (SELECT id, reservation_id, host_id, during, NULL::int AS slots, 0 AS vcpus, 0 AS memory_mb, 0 AS disk_gb
               FROM host_allocations
             UNION ALL
             SELECT id, reservation_id, host_id, during, slots, vcpus, memory_mb, disk_gb
               FROM instance_allocations) a
       JOIN reservations r ON r.id = a.reservation_id JOIN leases l ON l.id = r.lease_id`,
  );
  const otherUsage: Usage[] = [];
  for (const a of usage.rows) {
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
