/**
 * The floating-IP side of an import in Climate, through the plugin's repository: what
 * Climate already holds (addresses, allocations), what is new or different, and the
 * writes.
 */
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import {
  FloatingIpsRepository,
  type KeptFloatingIp,
} from '../plugins/virtual-floatingip/floatingips.repository.js';
import type { LeasePlan } from './plan.js';
import { differences } from './target.js';

const repo = new FloatingIpsRepository();

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/**
 * The addresses as PostgreSQL writes them back (`2001:DB8:0::1` is `2001:db8::1`), so a
 * second run and --verify compare like with like.
 */
export async function canonicalFloatingIps(
  em: EntityManager,
  rows: KeptFloatingIp[],
): Promise<KeptFloatingIp[]> {
  if (rows.length === 0) return rows;
  const { rows: out } = await sql<{ a: string }>(
    em,
    `SELECT host(a::inet) AS a FROM unnest($1::text[]) WITH ORDINALITY AS x(a, n) ORDER BY n`,
    [rows.map((r) => r.floating_ip_address)],
  );
  return rows.map((r, i) => ({ ...r, floating_ip_address: out[i].a }));
}

export async function existingFloatingIps(em: EntityManager): Promise<KeptFloatingIp[]> {
  return (await repo.list(em)).map((f) => ({
    ...f,
    created_at: f.created_at.toISOString(),
    updated_at: iso(f.updated_at),
  }));
}

/**
 * The addresses Climate lacks. One it has under the same id must be the same; one it has
 * on the same network under another id is a problem (two rows for one address).
 */
export function newFloatingIps(
  planned: KeptFloatingIp[],
  existing: KeptFloatingIp[],
  problems: string[],
): KeptFloatingIp[] {
  const byId = new Map(existing.map((f) => [f.id, f]));
  const byAddress = new Map(
    existing.map((f) => [`${f.floating_network_id} ${f.floating_ip_address}`, f]),
  );
  return planned.filter((f) => {
    const label = `floating IP ${f.floating_ip_address} (${f.id})`;
    const same = byId.get(f.id);
    const other = byAddress.get(`${f.floating_network_id} ${f.floating_ip_address}`);
    if (same === undefined && other === undefined) return true;
    if (same === undefined) {
      problems.push(`${label}: Climate has this address on its network under id ${other?.id}`);
      return false;
    }
    const diff = compareFloatingIp(f, same);
    if (diff.length > 0)
      problems.push(`${label} is already in Climate and differs: ${diff.join('; ')}`);
    return false;
  });
}

export function compareFloatingIp(source: KeptFloatingIp, climate: KeptFloatingIp): string[] {
  const pick = (f: KeptFloatingIp) => ({
    floating_network_id: f.floating_network_id,
    subnet_id: f.subnet_id,
    floating_ip_address: f.floating_ip_address,
    reservable: f.reservable,
    created_at: f.created_at,
    updated_at: f.updated_at,
  });
  return differences(pick(source), pick(climate));
}

/** Source and Climate, address by address (for --verify). */
export function verifyFloatingIps(planned: KeptFloatingIp[], existing: KeptFloatingIp[]): string[] {
  const byId = new Map(existing.map((f) => [f.id, f]));
  return planned.flatMap((f) => {
    const label = `floating IP ${f.floating_ip_address} (${f.id})`;
    const climate = byId.get(f.id);
    if (climate === undefined) return [`${label}: not in Climate`];
    return compareFloatingIp(f, climate).map((d) => `${label}: ${d}`);
  });
}

export async function writeFloatingIps(tx: EntityManager, rows: KeptFloatingIp[]): Promise<void> {
  await repo.insertKept(tx, rows);
}

/** After the leases' reservations: the allocations refer to them. */
export async function writeFloatingIpAllocations(
  tx: EntityManager,
  leases: LeasePlan[],
): Promise<void> {
  await repo.allocateKept(
    tx,
    leases.flatMap((l) => l.floatingIpAllocations),
  );
}
