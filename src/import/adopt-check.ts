/**
 * Nova's state (as Blazar left it) against Climate's record after an import: what
 * differs, each named, with the heal Climate applies. Pure: the caller reads both sides.
 */
import type { ComputePool, ComputeSurvey, PoolSpec } from '../compute/compute-driver.js';
import { FREEPOOL, reservationZone } from '../pools/pool-names.js';

/** Pools a host is in exactly one of (instance aggregates come on top of the freepool). */
const SINGLE_POOLS = new Set([FREEPOOL, 'shared', 'recycle']);
/** Blazar's zone prefix: its Nova filter treats such an aggregate as a reservation pool. */
const ZONE_PREFIX = 'blazar_';

export interface RecordedPool {
  name: string;
  kind: string;
  availabilityZone: string | null;
  metadata: Record<string, string>;
  hosts: string[];
}

export interface RecordedReservation {
  id: string;
  lease: string;
  type: string;
  /** `pending`, `active`, or an ended one (`deleted`, `completed`, `error`, …). */
  status: string;
  leaseStatus: string;
  serverGroupId: string | null;
  /** Instance slots per host, as Climate sizes the reservation. */
  slots: Map<string, number>;
}

export interface ClimateRecord {
  /** Each host's single pool (freepool, shared, recycle or a host reservation's). */
  poolOf: Map<string, string>;
  pools: RecordedPool[];
  reservations: RecordedReservation[];
  /** Per active instance reservation, its size per host as Nova holds it. */
  sizes: Map<string, Map<string, number>>;
}

export type Heal =
  | { kind: 'ensure-pool'; spec: PoolSpec }
  | { kind: 'delete-pool'; name: string }
  | { kind: 'remove-host'; pool: string; host: string }
  | { kind: 'add-host'; pool: string; host: string }
  | { kind: 'forget-group'; reservationId: string }
  /** Climate's start of an active reservation, run again: the heal's own resync. */
  | { kind: 'resync'; reservationId: string };

export interface Finding {
  problem: string;
  /** What Climate does about it; empty when it is only reported (left alone). */
  heals: Heal[];
  /** Said when nothing is done: why. */
  note?: string;
  /** Climate completes what Blazar never set: told in the summary, not as a mismatch. */
  quiet?: boolean;
}

/** Flavor and group ids as sets: a large site has thousands. */
type Objects = ComputeSurvey & { flavorIds: Set<string>; groupIds: Set<string> };

const list = (xs: string[]) => (xs.length === 0 ? 'no pool' : xs.join(', '));

function isSinglePool(pool: ComputePool, known: Set<string>): boolean {
  if (SINGLE_POOLS.has(pool.name)) return true;
  return (pool.availabilityZone ?? '').startsWith(ZONE_PREFIX) && known.has(pool.name);
}

export function checkAdoption(
  record: ClimateRecord,
  survey: ComputeSurvey,
  freepoolName: string,
): Finding[] {
  const out: Finding[] = [];
  const nova = new Map(survey.pools.map((p) => [p.name, p]));
  const reservations = new Map(record.reservations.map((r) => [r.id, r]));
  const known = new Set(reservations.keys());
  const label = (r: RecordedReservation) => `reservation ${r.id} (lease ${r.lease})`;

  if (!nova.has(FREEPOOL)) {
    out.push({
      problem: `Nova has no freepool aggregate named ${freepoolName}`,
      heals: [
        { kind: 'ensure-pool', spec: { name: FREEPOOL, availabilityZone: null, metadata: {} } },
      ],
    });
  }

  // Each host in the one pool Climate has it in.
  const poolsOf = new Map<string, string[]>();
  for (const p of survey.pools.filter((x) => isSinglePool(x, known))) {
    for (const host of p.hosts) poolsOf.set(host, [...(poolsOf.get(host) ?? []), p.name]);
  }
  for (const [host, wanted] of record.poolOf) {
    const inNova = (poolsOf.get(host) ?? []).sort();
    if (inNova.length === 1 && inNova[0] === wanted) continue;
    // Into its pool first, then out of the others: never in no pool meanwhile. A host
    // reservation's start (run again) takes its hosts out of the freepool itself.
    const owner = reservations.get(wanted);
    const heals: Heal[] = [];
    const resync = owner !== undefined && !inNova.includes(wanted);
    if (resync) heals.push({ kind: 'resync', reservationId: wanted });
    else if (!inNova.includes(wanted)) heals.push({ kind: 'add-host', pool: wanted, host });
    for (const pool of inNova.filter((p) => p !== wanted)) {
      if (!resync || pool !== FREEPOOL) heals.push({ kind: 'remove-host', pool, host });
    }
    const where =
      inNova.length > 1
        ? `in ${inNova.length} pools in Nova (${list(inNova)})`
        : `in ${list(inNova)} in Nova`;
    out.push({ problem: `host ${host} is ${where}; Climate has it in ${wanted}`, heals });
  }

  const recordedPools = new Map(record.pools.map((p) => [p.name, p]));
  const objects = {
    ...survey,
    flavorIds: new Set(survey.flavors),
    groupIds: new Set(survey.serverGroups),
  };
  for (const r of record.reservations) {
    if (r.type !== 'physical:host' && r.type !== 'virtual:instance') continue;
    const pool = nova.get(r.id);
    const recorded = recordedPools.get(r.id);
    if (r.status === 'active')
      out.push(...checkActive(r, pool, recorded, objects, record, label(r)));
    else if (r.status === 'pending') out.push(...checkPending(r, pool, objects, label(r)));
    else if (pool !== undefined && r.leaseStatus === 'TERMINATED') {
      // Blazar deletes it at the end; an end that failed half-way left it.
      out.push({
        problem: `aggregate ${r.id} of ended ${label(r)} is still in Nova (hosts: ${list(pool.hosts)})`,
        heals: [{ kind: 'delete-pool', name: r.id }],
      });
    }
  }

  for (const pool of survey.pools) {
    const blazars =
      (pool.availabilityZone ?? '').startsWith(ZONE_PREFIX) || 'blazar:owner' in pool.metadata;
    if (blazars && !known.has(pool.name) && !SINGLE_POOLS.has(pool.name)) {
      out.push({
        problem: `aggregate ${pool.name} looks like Blazar's but no reservation Climate holds has that id`,
        heals: [],
        note: 'left alone',
      });
    }
  }
  for (const id of survey.reservationClasses) {
    const r = reservations.get(id);
    if (r === undefined || (r.status !== 'active' && r.status !== 'pending')) {
      out.push({
        problem: `Placement keeps the resource class of ${r === undefined ? `reservation ${id}, unknown to Climate` : `ended ${label(r)}`}`,
        heals: [],
        note: 'left alone (Placement refuses to delete a class that servers still use)',
      });
    }
  }
  return out;
}

function checkActive(
  r: RecordedReservation,
  pool: ComputePool | undefined,
  recorded: RecordedPool | undefined,
  survey: Objects,
  record: ClimateRecord,
  label: string,
): Finding[] {
  const out: Finding[] = [];
  const resync: Heal = { kind: 'resync', reservationId: r.id };
  if (pool === undefined) {
    out.push({ problem: `aggregate ${r.id} of ${label} is missing in Nova`, heals: [resync] });
  } else if (recorded !== undefined) {
    const differing = Object.entries(recorded.metadata).filter(([k, v]) => pool.metadata[k] !== v);
    if (differing.length > 0) {
      // Keys Blazar never sets (filter_tenant_id on a host pool) are added without fuss.
      const quiet = differing.every(([k]) => !(k in pool.metadata));
      out.push({
        problem: `aggregate ${r.id} of ${label} ${quiet ? 'lacks' : 'has other'} metadata ${differing.map(([k, v]) => `${k}=${v}`).join(', ')}`,
        quiet,
        heals: [
          {
            kind: 'ensure-pool',
            spec: {
              name: r.id,
              availabilityZone: recorded.availabilityZone,
              metadata: recorded.metadata,
            },
          },
        ],
      });
    }
    if (r.type === 'physical:host' && pool.availabilityZone !== reservationZone(r.id)) {
      out.push({
        problem: `aggregate ${r.id} of ${label} has zone ${pool.availabilityZone ?? 'none'}, not ${reservationZone(r.id)}`,
        heals: [],
        note: 'left alone: Nova changes a zone only while its hosts run no server',
      });
    }
    if (r.type === 'virtual:instance') {
      const missing = recorded.hosts.filter((h) => !pool.hosts.includes(h));
      const extra = pool.hosts.filter((h) => !recorded.hosts.includes(h));
      if (missing.length + extra.length > 0) {
        out.push({
          problem: `aggregate ${r.id} of ${label} holds ${list(pool.hosts)} in Nova; Climate has ${list(recorded.hosts)}`,
          heals: [
            ...extra.map((host) => ({ kind: 'remove-host' as const, pool: r.id, host })),
            ...(missing.length > 0 ? [resync] : []),
          ],
        });
      }
    }
  }
  if (r.type !== 'virtual:instance') return out;
  out.push(...checkInstanceObjects(r, survey, label, true));
  const sizes = record.sizes.get(r.id) ?? new Map<string, number>();
  const wrong = [...r.slots].filter(([host, n]) => (sizes.get(host) ?? 0) !== n);
  if (wrong.length > 0) {
    out.push({
      problem: `Placement sizes ${label} ${wrong.map(([h, n]) => `${sizes.get(h) ?? 0} on ${h} (Climate: ${n})`).join(', ')}`,
      heals: [resync],
    });
  }
  return out;
}

function checkPending(
  r: RecordedReservation,
  pool: ComputePool | undefined,
  survey: Objects,
  label: string,
): Finding[] {
  const out: Finding[] = [];
  if (pool === undefined) {
    out.push({
      problem: `aggregate ${r.id} of ${label} is missing in Nova`,
      heals: [],
      note: "Climate's start makes it",
    });
  }
  if (r.type === 'virtual:instance') out.push(...checkInstanceObjects(r, survey, label, false));
  return out;
}

/** The flavor (id = reservation id) and the server group an instance reservation names. */
function checkInstanceObjects(
  r: RecordedReservation,
  survey: Objects,
  label: string,
  active: boolean,
): Finding[] {
  const out: Finding[] = [];
  const startAgain: Heal[] = active ? [{ kind: 'resync', reservationId: r.id }] : [];
  if (!survey.flavorIds.has(r.id)) {
    out.push({
      problem: `flavor ${r.id} of ${label} is missing in Nova`,
      heals: startAgain,
      ...(active ? {} : { note: "Climate's start makes it" }),
    });
  }
  if (r.serverGroupId !== null && !survey.groupIds.has(r.serverGroupId)) {
    out.push({
      problem: `server group ${r.serverGroupId} of ${label} is missing in Nova`,
      // Forgotten, the start makes the group again (reservation:<id>, in the tenant's project).
      heals: [{ kind: 'forget-group', reservationId: r.id }, ...startAgain],
    });
  }
  return out;
}
