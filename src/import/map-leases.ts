/** Blazar's leases, reservations, events and allocations, as Climate's rows. */
import type { StoredUserEvent } from '../model/lease.entity.js';
import { isUuid } from '../common/ids.js';
import type { JsonObject } from '../common/json.js';
import { validateHostParams } from '../plugins/physical-host/host-params.js';
import { validateInstanceParams } from '../plugins/virtual-instance/instance-params.js';
import type { SourceData, SourceRow } from './blazar-source.js';
import { FLOATINGIP, FloatingIpRows } from './map-floatingips.js';
import {
  flag,
  type HostRow,
  type InstanceAllocationRow,
  type LeasePlan,
  plusMinutes,
  type ReservationRow,
  utc,
  utcOrNull,
} from './plan.js';

export interface MapOptions {
  cleaningTimeMinutes: number;
  topologyLevels: readonly string[];
  /** Reservation types the operator chose to leave out (named on the command line). */
  skipTypes: readonly string[];
  /** Resource types enabled in this Climate (PLUGINS). */
  plugins: readonly string[];
}

const SUPPORTED = new Set(['physical:host', 'virtual:instance', FLOATINGIP]);
const LEASE_STATUSES = new Set(['PENDING', 'ACTIVE', 'TERMINATED', 'ERROR']);
const RESERVATION_STATUSES = new Set(['pending', 'active', 'deleted', 'error']);
const EVENT_TYPES = new Set(['start_lease', 'before_end_lease', 'end_lease']);
const EVENT_STATUSES = new Set(['UNDONE', 'DONE', 'ERROR']);

function groupBy(rows: SourceRow[], key: string): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  for (const row of rows) {
    const k = row[key] ?? '';
    const list = out.get(k);
    if (list === undefined) out.set(k, [row]);
    else list.push(row);
  }
  return out;
}

/** PostgreSQL writes uuids in lower case: compared in it, on both sides. */
function lower(value: string | null): string {
  return (value ?? '').toLowerCase();
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `physical:host` parameters from `computehost_reservations` (count_range "min-max"). */
function hostParams(row: SourceRow, levels: readonly string[]): JsonObject {
  const [min, max] = (row.count_range ?? '').split('-');
  return {
    ...validateHostParams(
      {
        min,
        max,
        hypervisor_properties: row.hypervisor_properties ?? '',
        resource_properties: row.resource_properties ?? '',
        before_end: row.before_end ?? 'default',
      },
      levels,
    ),
  };
}

/** `virtual:instance` parameters, with the flavor's group and aggregate Blazar made. */
function instanceParams(row: SourceRow): JsonObject {
  const affinity = row.affinity === null ? null : flag(row.affinity);
  const params = validateInstanceParams({
    vcpus: row.vcpus,
    memory_mb: row.memory_mb,
    disk_gb: row.disk_gb,
    amount: row.amount,
    affinity,
    resource_properties: row.resource_properties ?? '',
  });
  return {
    ...params,
    server_group_id: row.server_group_id,
    aggregate_id: row.aggregate_id === null ? null : Number(row.aggregate_id),
  };
}

/**
 * Every lease in the source, mapped. Each problem found is added to `problems` with the
 * lease's name and id; a lease with one is left out of the plan (nothing is written
 * anyway while there is a problem).
 */
export function mapLeases(
  source: SourceData,
  hosts: HostRow[],
  options: MapOptions,
  problems: string[],
  notes: string[],
): LeasePlan[] {
  const hostIds = new Set(hosts.map((h) => String(h.id)));
  const reservationsByLease = groupBy(source.reservations, 'lease_id');
  const eventsByLease = groupBy(source.events, 'lease_id');
  const hostDetails = new Map(source.computehost_reservations.map((r) => [r.reservation_id, r]));
  const instanceDetails = new Map(source.instance_reservations.map((r) => [r.reservation_id, r]));
  const allocations = groupBy(source.computehost_allocations, 'reservation_id');
  const floating = new FloatingIpRows(source);
  const unsupported = new Map<string, string[]>();
  const plans: LeasePlan[] = [];
  for (const l of source.leases) {
    const label = `lease ${l.name} (${l.id})`;
    const before = problems.length;
    const fail = (text: string) => problems.push(`${label}: ${text}`);
    if (!isUuid(l.id)) fail('its id is not a uuid');
    if (!LEASE_STATUSES.has(l.status ?? '')) {
      fail(
        `status ${l.status}: Blazar stopped in the middle of an action; start blazar-manager, ` +
          'let it finish (or fix the lease), stop it and import again',
      );
    }
    if (l.project_id === null || l.user_id === null) fail('no project_id or user_id');
    const start = utc(l.start_date ?? '');
    const endAt = utc(l.end_date ?? '');
    if (endAt <= start) fail('its end is not after its start');
    const plan: LeasePlan = {
      lease: {
        id: lower(l.id),
        name: l.name ?? '',
        project_id: l.project_id ?? '',
        user_id: l.user_id ?? '',
        start_at: start,
        end_at: endAt,
        status: l.status ?? '',
        degraded: flag(l.degraded),
        trust_id: l.trust_id,
        user_events: null,
        created_at: utc(l.created_at ?? l.start_date ?? ''),
        updated_at: utcOrNull(l.updated_at),
      },
      reservations: [],
      events: [],
      hostAllocations: [],
      instanceAllocations: [],
      floatingIpAllocations: [],
    };
    const end = plusMinutes(endAt, options.cleaningTimeMinutes);
    for (const r of reservationsByLease.get(l.id ?? '') ?? []) {
      const type = r.resource_type ?? '';
      if (options.skipTypes.includes(type)) {
        notes.push(`${label}: its ${type} reservation ${r.id} left out (--skip-type)`);
        continue;
      }
      if (!SUPPORTED.has(type) || !options.plugins.includes(type)) {
        unsupported.set(type, [...(unsupported.get(type) ?? []), label]);
        continue;
      }
      if (!isUuid(r.id)) fail(`reservation ${r.id}: its id is not a uuid`);
      if (!RESERVATION_STATUSES.has(r.status ?? '')) {
        fail(`reservation ${r.id}: unknown status ${r.status}`);
      }
      const details = type === 'physical:host' ? hostDetails.get(r.id) : instanceDetails.get(r.id);
      if (details === undefined && !(type === FLOATINGIP && floating.has(r.id))) {
        fail(`reservation ${r.id} (${type}) has no row in its per-type table`);
        continue;
      }
      let params: JsonObject;
      try {
        params =
          type === FLOATINGIP
            ? floating.params(r.id)
            : type === 'physical:host'
              ? hostParams(details as SourceRow, options.topologyLevels)
              : instanceParams(details as SourceRow);
      } catch (error) {
        fail(`reservation ${r.id}: ${message(error)}`);
        continue;
      }
      const reservation: ReservationRow = {
        id: lower(r.id),
        lease_id: plan.lease.id,
        resource_type: type,
        resource_id: r.resource_id,
        status: r.status ?? '',
        missing_resources: flag(r.missing_resources),
        resources_changed: flag(r.resources_changed),
        params,
        created_at: utc(r.created_at ?? l.created_at ?? ''),
        updated_at: utcOrNull(r.updated_at),
      };
      plan.reservations.push(reservation);
      if (type === FLOATINGIP) {
        // Blazar keeps these after the end too (they refuse the address's delete, as there).
        try {
          const network = String(params.network_id);
          const held = floating.held(r.id, reservation.id, network, start, end);
          plan.floatingIpAllocations.push(...held);
        } catch (error) {
          fail(`reservation ${r.id}: ${message(error)}`);
        }
        continue;
      }
      const held = allocations.get(r.id ?? '') ?? [];
      const missing = held.filter((a) => !hostIds.has(a.compute_host_id ?? ''));
      if (missing.length > 0) {
        fail(
          `reservation ${r.id}: allocated host(s) ${missing.map((a) => a.compute_host_id).join(', ')} not imported`,
        );
        continue;
      }
      if (reservation.status === 'deleted' && held.length > 0) {
        // Blazar deletes them at the end; Climate releases them then too.
        notes.push(
          `${label}: ${held.length} allocation(s) of its ended reservation ${r.id} left out`,
        );
        continue;
      }
      if (type === 'physical:host') {
        for (const a of held) {
          plan.hostAllocations.push({
            id: lower(a.id),
            reservation_id: reservation.id,
            host_id: Number(a.compute_host_id),
            start,
            end,
          });
        }
      } else {
        plan.instanceAllocations.push(...slotsPerHost(held, reservation, start, end));
      }
    }
    if (plan.reservations.length === 0 && problems.length === before) {
      notes.push(`${label}: no reservation Climate can take; lease left out`);
      continue;
    }
    const seen = new Set<string>();
    const userEvents: StoredUserEvent[] = [];
    for (const e of eventsByLease.get(l.id ?? '') ?? []) {
      const type = e.event_type ?? '';
      // A user-defined event (blazar lease-create --event): another type, or no status
      // (Blazar stores the CLI's event_type and drops its event_date); never run.
      if (!EVENT_TYPES.has(type) || e.status === null) {
        if (!isUuid(e.id)) fail(`event ${e.id}: its id is not a uuid`);
        userEvents.push({
          id: lower(e.id),
          event_type: e.event_type,
          time: e.time === null ? null : utc(e.time),
          status: e.status,
          created_at: utc(e.created_at ?? l.created_at ?? ''),
        });
        continue;
      }
      if (seen.has(type)) fail(`two ${type} events`);
      seen.add(type);
      if (!EVENT_STATUSES.has(e.status ?? '')) {
        fail(
          `event ${type} is ${e.status}: Blazar stopped while running it; start blazar-manager, ` +
            'let it finish, stop it and import again',
        );
      }
      if (!isUuid(e.id)) fail(`event ${e.id}: its id is not a uuid`);
      plan.events.push({
        id: lower(e.id),
        lease_id: plan.lease.id,
        event_type: type,
        time: utc(e.time ?? ''),
        status: e.status ?? '',
        created_at: utc(e.created_at ?? l.created_at ?? ''),
        updated_at: utcOrNull(e.updated_at),
      });
    }
    if (userEvents.length > 0) plan.lease.user_events = userEvents;
    if (problems.length === before) plans.push(plan);
  }
  for (const [type, leases] of unsupported) {
    problems.push(
      `reservation type ${type} is not supported by Climate (it takes ${takes(options)}); ` +
        `${leases.length} reservation(s) of it in: ` +
        `${[...new Set(leases)].join(', ')}. Nothing was written. To import everything else ` +
        `without them, run again with --skip-type ${type}`,
    );
  }
  return plans;
}

function takes(options: MapOptions): string {
  const types = [...SUPPORTED].filter((t) => options.plugins.includes(t));
  return types.length === 0 ? 'none with this PLUGINS' : `${types.join(', ')} with this PLUGINS`;
}

/** Blazar writes one allocation per instance slot; Climate one per host with a count. */
function slotsPerHost(
  held: SourceRow[],
  r: ReservationRow,
  start: string,
  end: string,
): InstanceAllocationRow[] {
  const byHost = groupBy(held, 'compute_host_id');
  return [...byHost].map(([hostId, rows]) => ({
    // The smallest of the slots' ids: the same on every run.
    id: rows.map((a) => lower(a.id)).sort()[0],
    reservation_id: r.id,
    host_id: Number(hostId),
    start,
    end,
    slots: rows.length,
    vcpus: Number(r.params.vcpus),
    memory_mb: Number(r.params.memory_mb),
    disk_gb: Number(r.params.disk_gb),
  }));
}
