/**
 * Blazar -> Climate: read the whole source, map it, check it as a create would, then
 * write what Climate lacks in one transaction. With a problem anywhere, nothing is
 * written and every problem is reported.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { Config } from '../config/config.js';
import { sql } from '../database/sql.js';
import { KNOWN_ALEMBIC_HEAD, type SourceData } from './blazar-source.js';
import { checkUsage, type Usage } from './checks.js';
import {
  canonicalFloatingIps,
  existingFloatingIps,
  newFloatingIps,
  verifyFloatingIps,
  writeFloatingIpAllocations,
  writeFloatingIps,
} from './floatingips-target.js';
import { checkFloatingIpUsage, mapFloatingIps } from './map-floatingips.js';
import { mapHosts, mapProperties } from './map-hosts.js';
import { mapLeases } from './map-leases.js';
import type { ImportPlan, LeasePlan } from './plan.js';
import { compareHost, compareLease, differences, type Existing, loadExisting } from './target.js';
import { type Progress, writeHosts, writeLeases, writeProperties } from './write.js';

export type ImportSettings = Pick<
  Config,
  | 'cleaningTimeMinutes'
  | 'azPrefix'
  | 'topologyLevels'
  | 'cpuAllocationRatio'
  | 'ramAllocationRatio'
  | 'diskAllocationRatio'
  | 'plugins'
>;

export interface ImportOptions {
  dryRun: boolean;
  /** A dry run on a database without Climate's tables yet: check as against an empty one. */
  emptyTarget?: boolean;
  skipTypes: readonly string[];
}

export interface ImportReport {
  written: boolean;
  hosts: { imported: number; present: number };
  properties: { imported: number; present: number };
  leases: { imported: number; present: number; byStatus: Record<string, number> };
  reservations: number;
  hostAllocations: number;
  instanceAllocations: number;
  floatingIps: { imported: number; present: number };
  floatingIpAllocations: number;
  events: number;
  notes: string[];
}

/** The import could not go ahead; `problems` lists every reason. Nothing was written. */
export class ImportRefused extends Error {
  constructor(readonly problems: string[]) {
    super(`The import was refused (nothing was written):\n  - ${problems.join('\n  - ')}`);
  }
}

/** Any number: two imports into one database never run at once. */
const IMPORT_LOCK = 7_316_027;

export function planImport(
  source: SourceData,
  settings: ImportSettings,
  options: ImportOptions,
): ImportPlan {
  const problems: string[] = [];
  const notes: string[] = [];
  if (source.alembicVersion !== KNOWN_ALEMBIC_HEAD) {
    notes.push(
      `Blazar schema revision ${source.alembicVersion ?? 'unknown'}; this importer was written for ${KNOWN_ALEMBIC_HEAD} (columns are read by name)`,
    );
  }
  for (const [table, n] of Object.entries(source.softDeleted))
    notes.push(`${table}: ${n} soft-deleted row(s) skipped`);
  for (const [table, n] of Object.entries(source.notCarried)) {
    if (n > 0) notes.push(`${table}: ${n} row(s) not imported (Climate keeps no such rows)`);
  }
  const properties = mapProperties(source, notes);
  const hosts = mapHosts(source, problems);
  const floatingIps = mapFloatingIps(source, problems);
  const leases = mapLeases(
    source,
    hosts,
    { ...settings, skipTypes: options.skipTypes },
    problems,
    notes,
  );
  return { hosts, properties, leases, floatingIps, problems, notes };
}

/** Imported allocations as the checks see them. */
function usageOf(leases: LeasePlan[]): Usage[] {
  return leases.flatMap((l) => {
    const lease = `lease ${l.lease.name} (${l.lease.id})`;
    return [
      ...l.hostAllocations.map((a) => ({
        hostId: a.host_id,
        reservationId: a.reservation_id,
        lease,
        start: a.start,
        end: a.end,
        slots: null,
      })),
      ...l.instanceAllocations.map((a) => ({
        hostId: a.host_id,
        reservationId: a.reservation_id,
        lease,
        start: a.start,
        end: a.end,
        slots: {
          vcpus: a.slots * a.vcpus,
          memory_mb: a.slots * a.memory_mb,
          disk_gb: a.slots * a.disk_gb,
        },
      })),
    ];
  });
}

/**
 * Maps, checks against Climate's current rows and writes (unless a dry run) in one
 * transaction. Rows Climate already has the same are left alone; rows it has different
 * are problems.
 */
export async function runImport(
  dataSource: DataSource,
  plan: ImportPlan,
  settings: ImportSettings,
  options: ImportOptions,
  progress: Progress = () => undefined,
): Promise<ImportReport> {
  return dataSource.transaction(async (tx: EntityManager) => {
    await sql(tx, 'SELECT pg_advisory_xact_lock($1)', [IMPORT_LOCK]);
    const existing = options.emptyTarget ? emptyTarget() : await loadExisting(tx, plan);
    const problems = [...plan.problems];
    const newHosts = plan.hosts.filter((h) => {
      const same = existing.hosts.get(h.id);
      const named = existing.hostNames.get(h.hypervisor_hostname);
      if (same === undefined && named === undefined) return true;
      if (same === undefined || named !== h.id) {
        problems.push(
          `host ${h.hypervisor_hostname} (${h.id}): Climate has it under id ${named ?? '?'} or another host with id ${h.id}`,
        );
        return false;
      }
      const diff = compareHost(h, same);
      if (diff.length > 0)
        problems.push(
          `host ${h.hypervisor_hostname} is already in Climate and differs: ${diff.join('; ')}`,
        );
      return false;
    });
    const newProperties = plan.properties.filter((p) => {
      const same = existing.properties.get(p.property_name);
      if (same === undefined) return true;
      // A property Climate made itself (a host registered there) may be older or newer.
      const diff = differences(p.private, same.private);
      if (diff.length > 0)
        problems.push(
          `property ${p.property_name}: private is ${same.private} in Climate, ${p.private} in Blazar`,
        );
      return false;
    });
    const newLeases = plan.leases.filter((l) => {
      const same = existing.leases.get(l.lease.id);
      if (same === undefined) return true;
      const diff = compareLease(l, same);
      if (diff.length > 0) {
        problems.push(
          `lease ${l.lease.name} (${l.lease.id}) is already in Climate and differs: ${diff.slice(0, 5).join('; ')}`,
        );
      }
      return false;
    });
    const allHosts = [
      ...plan.hosts,
      ...[...existing.hosts.values()].filter((h) => !plan.hosts.some((p) => p.id === h.id)),
    ];
    problems.push(
      ...checkUsage(allHosts, [...usageOf(plan.leases), ...existing.otherUsage], settings),
    );
    const climateFips = options.emptyTarget ? [] : await existingFloatingIps(tx);
    const fips = await canonicalFloatingIps(tx, plan.floatingIps);
    const newFips = newFloatingIps(fips, climateFips, problems);
    const fipUses = plan.leases.flatMap((l) =>
      l.floatingIpAllocations.map((a) => ({
        ...a,
        lease: `lease ${l.lease.name} (${l.lease.id})`,
      })),
    );
    problems.push(
      ...checkFloatingIpUsage(
        [...fipUses, ...existing.otherFloatingIpUsage],
        [...fips, ...climateFips],
      ),
    );
    if (problems.length > 0) throw new ImportRefused(problems);
    const report = summary(plan, newHosts.length, newProperties.length, newLeases, newFips.length);
    if (options.dryRun) return report;
    await writeProperties(tx, newProperties);
    await writeHosts(tx, newHosts, settings.topologyLevels, progress);
    await writeFloatingIps(tx, newFips);
    await writeLeases(tx, newLeases, progress, settings.azPrefix);
    await writeFloatingIpAllocations(tx, newLeases);
    const any = newHosts.length + newProperties.length + newLeases.length + newFips.length;
    return { ...report, written: any > 0 };
  });
}

function emptyTarget(): Existing {
  return {
    hosts: new Map(),
    hostNames: new Map(),
    properties: new Map(),
    leases: new Map(),
    otherUsage: [],
    otherFloatingIpUsage: [],
  };
}

function summary(
  plan: ImportPlan,
  hosts: number,
  properties: number,
  leases: LeasePlan[],
  floatingIps: number,
): ImportReport {
  const byStatus: Record<string, number> = {};
  for (const l of leases) byStatus[l.lease.status] = (byStatus[l.lease.status] ?? 0) + 1;
  return {
    written: false,
    hosts: { imported: hosts, present: plan.hosts.length - hosts },
    properties: { imported: properties, present: plan.properties.length - properties },
    leases: { imported: leases.length, present: plan.leases.length - leases.length, byStatus },
    reservations: leases.reduce((n, l) => n + l.reservations.length, 0),
    hostAllocations: leases.reduce((n, l) => n + l.hostAllocations.length, 0),
    instanceAllocations: leases.reduce((n, l) => n + l.instanceAllocations.length, 0),
    floatingIps: { imported: floatingIps, present: plan.floatingIps.length - floatingIps },
    floatingIpAllocations: leases.reduce((n, l) => n + l.floatingIpAllocations.length, 0),
    events: leases.reduce((n, l) => n + l.events.length, 0),
    notes: plan.notes,
  };
}

/**
 * Source and Climate, lease by lease (and host by host): every difference, each with
 * what it is on both sides. Empty when Climate holds exactly what Blazar did.
 */
export async function verifyImport(dataSource: DataSource, plan: ImportPlan): Promise<string[]> {
  const existing = await loadExisting(dataSource.manager, plan);
  const out = [...plan.problems];
  for (const h of plan.hosts) {
    const climate = existing.hosts.get(h.id);
    if (climate === undefined) out.push(`host ${h.hypervisor_hostname}: not in Climate`);
    else out.push(...compareHost(h, climate).map((d) => `host ${h.hypervisor_hostname}: ${d}`));
  }
  const fips = await canonicalFloatingIps(dataSource.manager, plan.floatingIps);
  out.push(...verifyFloatingIps(fips, await existingFloatingIps(dataSource.manager)));
  for (const l of plan.leases) {
    const label = `lease ${l.lease.name} (${l.lease.id})`;
    const climate = existing.leases.get(l.lease.id);
    if (climate === undefined) out.push(`${label}: not in Climate`);
    else out.push(...compareLease(l, climate).map((d) => `${label}: ${d}`));
  }
  return out;
}
