/**
 * Writes the missing part of an import in set-based statements of a few thousand rows,
 * inside the caller's transaction; Climate's pool record is made as Climate would have
 * made it while running these leases.
 */
import type { EntityManager } from 'typeorm';
import { insertEventRows, insertLeaseRows, insertReservationRows } from '../model/lease-tables.js';
import { insertPropertyRows } from '../hosts/host-properties.service.js';
import { insertHostAllocationRows } from '../plugins/physical-host/host-allocations.repository.js';
import { insertSlotRows } from '../plugins/virtual-instance/slots.repository.js';
import { bumpHostIds, insertHostRows } from '../pools/hosts.repository.js';
import {
  insertReservationPools,
  insertTopology,
  joinFreepool,
} from '../pools/pools.repository-import.js';
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
    await insertHostRows(tx, part);
    // Every host starts in the freepool; hosts of running reservations move on below.
    await joinFreepool(
      tx,
      part.map((h) => h.id),
      FREEPOOL,
    );
    await writeTopology(tx, part, topologyLevels);
    done += part.length;
    progress(`hosts: ${done}/${hosts.length}`);
  }
  await bumpHostIds(tx);
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
  await insertTopology(tx, pairs);
}

export async function writeProperties(tx: EntityManager, properties: PropertyRow[]): Promise<void> {
  if (properties.length === 0) return;
  await insertPropertyRows(tx, properties);
}

export async function writeLeases(
  tx: EntityManager,
  leases: LeasePlan[],
  progress: Progress,
  azPrefix: string,
): Promise<void> {
  let done = 0;
  for (const part of chunks(leases, BATCH)) {
    await insertLeaseRows(
      tx,
      part.map((p) => p.lease),
    );
    await insertReservationRows(
      tx,
      part.flatMap((p) => p.reservations),
    );
    await insertEventRows(
      tx,
      part.flatMap((p) => p.events),
    );
    await insertHostAllocationRows(
      tx,
      part.flatMap((p) => p.hostAllocations),
    );
    await insertSlotRows(
      tx,
      part.flatMap((p) => p.instanceAllocations),
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
  await insertReservationPools(tx, pools, members);
}
