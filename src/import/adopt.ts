/**
 * Adoption of the compute service's state after an import: Climate takes over the
 * aggregates, flavors, server groups and Placement classes Blazar made (found by the
 * names and ids Climate's rows hold, so its start, end and heal use them as they are),
 * reports each mismatch by name, and heals it as Climate heals: its own record is the
 * truth, and an active reservation's start is run again to bring Nova in line.
 */
import type { INestApplicationContext } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import {
  COMPUTE_DRIVER,
  type ComputeDriver,
  type ComputeSurvey,
} from '../compute/compute-driver.js';
import { adoptedReservations, forgetServerGroup } from '../model/lease-tables.js';
import { activeSlots } from '../pools/host-usage.js';
import { poolsByHostName, reservationAggregates } from '../pools/pools.repository-import.js';
import { HealingService } from '../events/healing.service.js';
import { UpkeepModule } from '../events/upkeep.module.js';
import {
  checkAdoption,
  type PoolNaming,
  type ClimateRecord,
  type Finding,
  type Heal,
  type RecordedReservation,
} from './adopt-check.js';

export interface AdoptReport {
  /** What differed when adoption began. */
  found: Finding[];
  /** What still differs after healing (a dry run heals nothing). */
  remaining: Finding[];
  adopted: { pools: number; flavors: number; serverGroups: number; classes: number };
}

/** Climate's record of its pools and reservations, and Nova's sizes of the active ones. */
export async function readRecord(em: EntityManager, driver: ComputeDriver): Promise<ClimateRecord> {
  const single = await poolsByHostName(em);
  const pools = await reservationAggregates(em);
  const reservations = await adoptedReservations(em);
  const slots = await activeSlots(em);
  const slotsOf = new Map<string, Map<string, number>>();
  for (const s of slots) {
    const held = slotsOf.get(s.reservation_id) ?? new Map<string, number>();
    slotsOf.set(s.reservation_id, held.set(s.host, s.slots));
  }
  const recorded: RecordedReservation[] = reservations.map((r) => ({
    id: r.id,
    lease: r.lease,
    type: r.type,
    status: r.status,
    leaseStatus: r.lease_status,
    serverGroupId: r.group_id,
    slots: slotsOf.get(r.id) ?? new Map<string, number>(),
  }));
  const sizes = new Map<string, Map<string, number>>();
  for (const r of recorded.filter((x) => x.status === 'active' && x.slots.size > 0)) {
    sizes.set(
      r.id,
      (await driver.reservationSize(r.id, [...r.slots.keys()])) ?? new Map<string, number>(),
    );
  }
  return {
    poolOf: new Map(single.map((r) => [r.host, r.pool])),
    pools: pools.map((p) => ({
      name: p.name,
      kind: p.kind,
      availabilityZone: p.availability_zone,
      metadata: p.metadata,
      hosts: p.hosts,
    })),
    reservations: recorded,
    sizes,
  };
}

/** Nova's objects that Climate's rows now name: taken over as they are. */
function adopted(record: ClimateRecord, survey: ComputeSurvey): AdoptReport['adopted'] {
  const live = record.reservations.filter((r) => r.status === 'active' || r.status === 'pending');
  const ids = new Set(live.map((r) => r.id));
  const instances = live.filter((r) => r.type === 'virtual:instance');
  const flavors = new Set(survey.flavors);
  const groups = new Set(survey.serverGroups);
  return {
    pools: survey.pools.filter((p) => ids.has(p.name) || p.name === 'freepool').length,
    flavors: instances.filter((r) => flavors.has(r.id)).length,
    serverGroups: instances.filter((r) => r.serverGroupId !== null && groups.has(r.serverGroupId))
      .length,
    classes: survey.reservationClasses.filter((id) => ids.has(id)).length,
  };
}

const ORDER: Heal['kind'][] = [
  'ensure-pool',
  'delete-pool',
  'forget-group',
  'add-host',
  'remove-host',
  'resync',
];

/**
 * Checks Nova against Climate's record and, unless `dryRun`, heals what differs; then
 * checks again. Null when the driver keeps no state of its own (nothing to adopt).
 */
export async function adoptComputeState(
  app: INestApplicationContext,
  names: PoolNaming,
  options: { dryRun: boolean },
): Promise<AdoptReport | null> {
  const dataSource = app.get(DataSource);
  const driver = app.get<ComputeDriver>(COMPUTE_DRIVER);
  const survey = await driver.survey();
  if (survey === null) return null;
  const record = await readRecord(dataSource.manager, driver);
  const found = checkAdoption(record, survey, names);
  const healable = (fs: Finding[]) => fs.filter((f) => f.heals.length > 0);
  const report = { found, remaining: healable(found), adopted: adopted(record, survey) };
  const heals = found.flatMap((f) => f.heals);
  if (options.dryRun || heals.length === 0) return report;
  await heal(app, dataSource, driver, heals);
  const after = await driver.survey();
  const again = checkAdoption(await readRecord(dataSource.manager, driver), after ?? survey, names);
  return { ...report, remaining: healable(again) };
}

async function heal(
  app: INestApplicationContext,
  dataSource: DataSource,
  driver: ComputeDriver,
  heals: Heal[],
): Promise<void> {
  const seen = new Set<string>();
  const unique = heals.filter((h) => {
    const key = JSON.stringify(h);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  unique.sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind));
  const resyncs: string[] = [];
  for (const h of unique) {
    if (h.kind === 'ensure-pool') await driver.ensurePool(h.spec);
    else if (h.kind === 'delete-pool') await driver.deletePool(h.name);
    else if (h.kind === 'add-host') await driver.addHost(h.pool, h.host);
    else if (h.kind === 'remove-host') await driver.removeHost(h.pool, h.host);
    else if (h.kind === 'resync') resyncs.push(h.reservationId);
    else {
      await forgetServerGroup(dataSource.manager, h.reservationId);
    }
  }
  if (resyncs.length === 0) return;
  // The periodic heal's own path: each plugin's start, run again for these. Taken from the
  // module that provides it (strict), not from whichever module Nest finds one in first.
  await app.select(UpkeepModule).get(HealingService, { strict: true }).resync(resyncs);
}

/** The report as lines for the operator. */
export function describeAdoption(
  report: AdoptReport,
  freepoolName: string,
  dryRun: boolean,
): string[] {
  const a = report.adopted;
  const lines = [
    `adopted from Nova: ${a.pools} aggregate(s) (freepool ${freepoolName} and the reservations'), ` +
      `${a.flavors} flavor(s), ${a.serverGroups} server group(s), ${a.classes} Placement class(es)`,
  ];
  const quiet = report.found.filter((f) => f.quiet);
  if (quiet.length > 0) {
    lines.push(
      `completed Climate's metadata on ${quiet.length} aggregate(s) (filter_tenant_id, …)`,
    );
  }
  const found = report.found.filter((f) => !f.quiet);
  for (const f of found) {
    const what =
      f.heals.length === 0
        ? (f.note ?? 'left alone')
        : `${dryRun ? 'would heal' : 'healed'}: ${f.heals.map(describeHeal).join(', ')}`;
    lines.push(`MISMATCH ${f.problem} (${what})`);
  }
  if (!dryRun) {
    for (const f of report.remaining) lines.push(`NOT HEALED ${f.problem}`);
  }
  const healable = found.filter((f) => f.heals.length > 0).length;
  const alone = found.length - healable;
  const left = alone === 0 ? '' : `; ${alone} left alone`;
  const dry = dryRun ? '; dry run: nothing was changed' : '';
  lines.push(
    healable === 0
      ? `adopt: Nova holds what Climate holds${left}${dry}`
      : dryRun
        ? `adopt: ${healable} mismatch(es) to heal${left}${dry}`
        : `adopt: ${healable} mismatch(es), ${healable - report.remaining.length} healed${left}`,
  );
  return lines;
}

function describeHeal(h: Heal): string {
  switch (h.kind) {
    case 'ensure-pool':
      return `aggregate ${h.spec.name} made or completed`;
    case 'delete-pool':
      return `aggregate ${h.name} deleted`;
    case 'add-host':
      return `${h.host} added to ${h.pool}`;
    case 'remove-host':
      return `${h.host} removed from ${h.pool}`;
    case 'forget-group':
      return `the start makes reservation ${h.reservationId}'s server group again`;
    case 'resync':
      return `reservation ${h.reservationId} started again`;
  }
}
