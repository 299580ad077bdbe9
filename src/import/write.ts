/**
 * Writes the missing part of an import in set-based statements of a few thousand rows,
 * inside the caller's transaction; Climate's pool record is made as Climate would have
 * made it while running these leases.
 */
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { FREEPOOL, reservationZone } from '../pools/pool-names.js';
import { chunks, type HostRow, type LeasePlan, type PropertyRow } from './plan.js';

const BATCH = 5000;

export type Progress = (line: string) => void;

export async function writeHosts(
  tx: EntityManager,
  hosts: HostRow[],
  topologyLevels: readonly string[],
  progress: Progress,
): Promise<void> {
  let done = 0;
  for (const part of chunks(hosts, BATCH)) {
    const col = <K extends keyof HostRow>(k: K) => part.map((h) => h[k]);
    await sql(
      tx,
      `INSERT INTO hosts (id, hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
                          hypervisor_version, cpu_info, availability_zone, reservable, reported_down,
                          capabilities, trust_id, created_at, updated_at)
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[],
                            $8::int[], $9::text[], $10::text[], $11::bool[], $12::bool[], $13::jsonb[],
                            $14::text[], $15::timestamptz[], $16::timestamptz[])`,
      [
        col('id'),
        col('hypervisor_hostname'),
        col('service_name'),
        col('vcpus'),
        col('memory_mb'),
        col('local_gb'),
        col('hypervisor_type'),
        col('hypervisor_version'),
        col('cpu_info'),
        col('availability_zone'),
        col('reservable'),
        col('reported_down'),
        part.map((h) => JSON.stringify(h.capabilities)),
        col('trust_id'),
        col('created_at'),
        col('updated_at'),
      ],
    );
    const ids = col('id');
    // Every host starts in the freepool; hosts of running reservations move on below.
    await sql(
      tx,
      `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
       SELECT a.id, h, 'freepool', now() FROM aggregates a, unnest($1::int[]) h WHERE a.name = $2`,
      [ids, FREEPOOL],
    );
    await writeTopology(tx, part, topologyLevels);
    done += part.length;
    progress(`hosts: ${done}/${hosts.length}`);
  }
  // New hosts registered later get ids after the imported ones.
  await sql(tx, `SELECT setval('hosts_id_seq', greatest((SELECT max(id) FROM hosts), 1))`);
}

/** Topology aggregates (`rack:r1`) from the capabilities named by TOPOLOGY_LEVELS. */
async function writeTopology(
  tx: EntityManager,
  hosts: HostRow[],
  levels: readonly string[],
): Promise<void> {
  const pairs = hosts.flatMap((h) =>
    levels
      .filter((l) => h.capabilities[l] !== undefined)
      .map((l) => ({ id: h.id, level: l, value: h.capabilities[l] })),
  );
  if (pairs.length === 0) return;
  const names = pairs.map((p) => `${p.level}:${p.value}`);
  await sql(
    tx,
    `INSERT INTO aggregates (name, kind, metadata, created_at)
     SELECT DISTINCT n, 'topology', jsonb_build_object('level', l, 'value', v), now()
       FROM unnest($1::text[], $2::text[], $3::text[]) AS x(n, l, v)
     ON CONFLICT (name) DO NOTHING`,
    [names, pairs.map((p) => p.level), pairs.map((p) => p.value)],
  );
  await sql(
    tx,
    `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
     SELECT a.id, x.h, 'topology', now() FROM unnest($1::int[], $2::text[]) AS x(h, n)
       JOIN aggregates a ON a.name = x.n`,
    [pairs.map((p) => p.id), names],
  );
}

export async function writeProperties(tx: EntityManager, properties: PropertyRow[]): Promise<void> {
  if (properties.length === 0) return;
  await sql(
    tx,
    `INSERT INTO resource_properties (resource_type, property_name, private, created_at, updated_at)
     SELECT 'physical:host', * FROM unnest($1::text[], $2::bool[], $3::timestamptz[], $4::timestamptz[])`,
    [
      properties.map((p) => p.property_name),
      properties.map((p) => p.private),
      properties.map((p) => p.created_at),
      properties.map((p) => p.updated_at),
    ],
  );
}

export async function writeLeases(
  tx: EntityManager,
  leases: LeasePlan[],
  progress: Progress,
  azPrefix: string,
): Promise<void> {
  let done = 0;
  for (const part of chunks(leases, BATCH)) {
    const rows = part.map((p) => p.lease);
    const col = <K extends keyof (typeof rows)[0]>(k: K) => rows.map((r) => r[k]);
    await sql(
      tx,
      `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, degraded, trust_id, created_at, updated_at,
                           user_events)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                            $7::text[], $8::bool[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::jsonb[])`,
      [
        col('id'),
        col('name'),
        col('project_id'),
        col('user_id'),
        col('start_at'),
        col('end_at'),
        col('status'),
        col('degraded'),
        col('trust_id'),
        col('created_at'),
        col('updated_at'),
        rows.map((r) => (r.user_events === null ? null : JSON.stringify(r.user_events))),
      ],
    );
    const res = part.flatMap((p) => p.reservations);
    const rcol = <K extends keyof (typeof res)[0]>(k: K) => res.map((r) => r[k]);
    await sql(
      tx,
      `INSERT INTO reservations (id, lease_id, resource_type, resource_id, status, missing_resources,
                                 resources_changed, params, created_at, updated_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::bool[], $7::bool[],
                            $8::jsonb[], $9::timestamptz[], $10::timestamptz[])`,
      [
        rcol('id'),
        rcol('lease_id'),
        rcol('resource_type'),
        rcol('resource_id'),
        rcol('status'),
        rcol('missing_resources'),
        rcol('resources_changed'),
        res.map((r) => JSON.stringify(r.params)),
        rcol('created_at'),
        rcol('updated_at'),
      ],
    );
    const ev = part.flatMap((p) => p.events);
    const ecol = <K extends keyof (typeof ev)[0]>(k: K) => ev.map((e) => e[k]);
    await sql(
      tx,
      `INSERT INTO events (id, lease_id, event_type, time, status, created_at, updated_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[],
                            $6::timestamptz[], $7::timestamptz[])`,
      [
        ecol('id'),
        ecol('lease_id'),
        ecol('event_type'),
        ecol('time'),
        ecol('status'),
        ecol('created_at'),
        ecol('updated_at'),
      ],
    );
    const ha = part.flatMap((p) => p.hostAllocations);
    await sql(
      tx,
      `INSERT INTO host_allocations (id, reservation_id, host_id, during)
       SELECT x.id, x.r, x.h, tstzrange(x.lo, x.up, '[)')
         FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::timestamptz[], $5::timestamptz[]) AS x(id, r, h, lo, up)`,
      [
        ha.map((a) => a.id),
        ha.map((a) => a.reservation_id),
        ha.map((a) => a.host_id),
        ha.map((a) => a.start),
        ha.map((a) => a.end),
      ],
    );
    const ia = part.flatMap((p) => p.instanceAllocations);
    await sql(
      tx,
      `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
       SELECT x.id, x.r, x.h, x.s, x.c, x.m, x.g, tstzrange(x.lo, x.up, '[)')
         FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[],
                     $8::timestamptz[], $9::timestamptz[]) AS x(id, r, h, s, c, m, g, lo, up)`,
      [
        ia.map((a) => a.id),
        ia.map((a) => a.reservation_id),
        ia.map((a) => a.host_id),
        ia.map((a) => a.slots),
        ia.map((a) => a.vcpus),
        ia.map((a) => a.memory_mb),
        ia.map((a) => a.disk_gb),
        ia.map((a) => a.start),
        ia.map((a) => a.end),
      ],
    );
    await writePools(tx, part, azPrefix);
    done += part.length;
    progress(`leases: ${done}/${leases.length}`);
  }
}

/**
 * The pools of running reservations, as Climate's start makes them: a host reservation's
 * pool holds its hosts (out of the freepool), an instance reservation's aggregate lists
 * its hosts beside the freepool. Both are named by the reservation id, as Blazar's are.
 */
async function writePools(tx: EntityManager, leases: LeasePlan[], azPrefix: string): Promise<void> {
  const pools: { name: string; kind: string; zone: string | null; metadata: string }[] = [];
  const members: { name: string; host: number; kind: string }[] = [];
  for (const l of leases) {
    const owner = l.lease.project_id;
    for (const r of l.reservations.filter((x) => x.status === 'active')) {
      if (r.resource_type === 'physical:host') {
        const metadata = { 'blazar:owner': owner, filter_tenant_id: owner };
        pools.push({
          name: r.id,
          kind: 'reservation',
          zone: reservationZone(r.id, azPrefix),
          metadata: JSON.stringify(metadata),
        });
        for (const a of l.hostAllocations.filter((x) => x.reservation_id === r.id)) {
          members.push({ name: r.id, host: a.host_id, kind: 'reservation' });
        }
      } else {
        const group: unknown = r.params.server_group_id;
        const metadata = {
          reservation: r.id,
          filter_tenant_id: owner,
          'blazar:owner': owner,
          ...(typeof group === 'string' ? { affinity_id: group } : {}),
        };
        pools.push({
          name: r.id,
          kind: 'instance',
          zone: null,
          metadata: JSON.stringify(metadata),
        });
        for (const a of l.instanceAllocations.filter((x) => x.reservation_id === r.id)) {
          members.push({ name: r.id, host: a.host_id, kind: 'instance' });
        }
      }
    }
  }
  if (pools.length === 0) return;
  await sql(
    tx,
    `INSERT INTO aggregates (name, kind, availability_zone, metadata, created_at)
     SELECT *, now() FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])`,
    [
      pools.map((p) => p.name),
      pools.map((p) => p.kind),
      pools.map((p) => p.zone),
      pools.map((p) => p.metadata),
    ],
  );
  const pooled = members.filter((m) => m.kind === 'reservation').map((m) => m.host);
  // A host is in one pool at a time: out of the freepool into its reservation's.
  await sql(
    tx,
    `DELETE FROM aggregate_hosts WHERE host_id = ANY($1::int[]) AND kind IN ('freepool', 'shared', 'recycle', 'reservation')`,
    [pooled],
  );
  await sql(
    tx,
    `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
     SELECT a.id, x.h, x.k, now() FROM unnest($1::text[], $2::int[], $3::text[]) AS x(n, h, k)
       JOIN aggregates a ON a.name = x.n`,
    [members.map((m) => m.name), members.map((m) => m.host), members.map((m) => m.kind)],
  );
}
