import { planHost, readyAt, type PowerSettings, type PowerState } from './power-plan.js';

/**
 * A year (or any span) of synthetic lease load on a pool, with the power plan run every
 * `stepMinutes` through the same planHost the manager uses: how many host-hours the
 * pool spends off against keeping every host on. Pure computation, seeded.
 */
export interface SimulationOptions {
  hosts: number;
  days: number;
  /** Host-hours asked for over host-hours in the pool (0..1). */
  targetUse: number;
  settings: PowerSettings;
  maxTransitionsPerMinute: number;
  stepMinutes: number;
  seed: number;
  /** false: every host always on (the baseline). */
  powerPlan: boolean;
  /** Hosts marked always on (the last ones: a warm reserve for short-notice leases). */
  alwaysOn: number;
}

export interface SimulationResult {
  targetUse: number;
  /** Host-hours reserved over host-hours in the pool. */
  achievedUse: number;
  /** Host-hours off over host-hours in the pool: the share saved against always-on. */
  savedShare: number;
  leases: number;
  /** Leases that took a later start than asked (no host free or ready in time). */
  postponed: number;
  /** Total delay of the postponed leases, in hours. */
  delayHours: number;
  /** Leases that found no room within a week of their asked start. */
  refused: number;
  /** Power-ons and power-offs per host and day. */
  transitionsPerHostDay: number;
  /** Lease starts on a host that was not on (the start would have waited): should be 0. */
  lateStarts: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

interface Request {
  createdAt: number;
  start: number;
  end: number;
  hosts: number;
}

interface SimHost {
  state: PowerState;
  changedAt: number;
  deadline: number | null;
  /** Allocations known so far, by start. */
  busy: { start: number; end: number }[];
  offMs: number;
}

/** mulberry32: a small seeded generator, so the figures are reproducible. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Lease requests: 1-4 hosts, 1 hour to 3 days (log-uniform), asked from a few minutes to
 * a week ahead; fewer on weekends and at night. The arrival rate is set so that the
 * asked host-hours are `targetUse` of the pool's.
 */
export function requests(o: SimulationOptions, rand: () => number): Request[] {
  const meanHosts = 2.5;
  const minD = Math.log(HOUR);
  const maxD = Math.log(3 * DAY);
  const meanDuration = (3 * DAY - HOUR) / (maxD - minD);
  const weight = (t: number) => {
    const day = Math.floor(t / DAY) % 7;
    const hour = (t % DAY) / HOUR;
    return (day >= 5 ? 0.4 : 1) * (hour >= 8 && hour < 20 ? 1.6 : 0.4);
  };
  // Mean weight over a week, so that the rate averages out to the target.
  let mean = 0;
  for (let h = 0; h < 7 * 24; h++) mean += weight(h * HOUR + 1) / (7 * 24);
  const perMs = (o.targetUse * o.hosts) / (meanHosts * meanDuration) / mean;
  const out: Request[] = [];
  const span = o.days * DAY;
  // Poisson arrivals by thinning against the busiest weight (1.6).
  for (let t = 0; ;) {
    t += -Math.log(1 - rand()) / (perMs * 1.6);
    if (t >= span) break;
    if (rand() > weight(t) / 1.6) continue;
    const soon = rand() < 0.3;
    const ahead = soon ? rand() * 30 * MINUTE : HOUR + rand() * 7 * DAY;
    const duration = Math.exp(minD + rand() * (maxD - minD));
    const start = t + ahead;
    out.push({ createdAt: t, start, end: start + duration, hosts: 1 + Math.floor(rand() * 4) });
  }
  return out;
}

function free(h: SimHost, start: number, end: number): boolean {
  return !h.busy.some((b) => b.start < end && start < b.end);
}

/** First fit by host order (as Climate picks: by id), among hosts free and ready in time. */
function place(pool: SimHost[], r: Request, now: number, s: PowerSettings): SimHost[] | null {
  const picked: SimHost[] = [];
  for (const h of pool) {
    const ready = readyAt(h.state, h.deadline, now, s.bootMs);
    const inTime = ready <= Math.max(r.start - s.leadMs, now);
    if (inTime && free(h, r.start, r.end)) picked.push(h);
    if (picked.length === r.hosts) return picked;
  }
  return null;
}

export function simulate(o: SimulationOptions): SimulationResult {
  const rand = random(o.seed);
  const s = o.settings;
  const pool: SimHost[] = Array.from({ length: o.hosts }, () => ({
    state: 'on',
    changedAt: -DAY,
    deadline: null,
    busy: [],
    offMs: 0,
  }));
  const stepMs = o.stepMinutes * MINUTE;
  const budget = o.maxTransitionsPerMinute * o.stepMinutes;
  const horizon = s.idleMs + s.bootMs + 2 * s.leadMs + stepMs;
  const asked = requests(o, rand);
  let next = 0;
  let reserved = 0;
  let postponed = 0;
  let delayMs = 0;
  let refused = 0;
  let transitions = 0;
  let lateStarts = 0;
  const span = o.days * DAY;
  for (let now = 0; now < span; now += stepMs) {
    for (; next < asked.length && asked[next].createdAt <= now; next++) {
      const r = { ...asked[next], start: Math.max(asked[next].start, now) };
      const length = r.end - r.start;
      let hosts: SimHost[] | null = null;
      let delay = 0;
      // As a user taking the 409's earliest start: later by steps, then by hours.
      while (hosts === null && delay <= 7 * DAY) {
        hosts = place(
          pool,
          { ...r, start: r.start + delay, end: r.start + delay + length },
          now,
          s,
        );
        if (hosts === null) delay += delay < 2 * HOUR ? stepMs : HOUR;
      }
      if (hosts === null) {
        refused++;
        continue;
      }
      if (delay > 0) postponed++;
      delayMs += delay;
      for (const h of hosts) {
        h.busy.push({ start: r.start + delay, end: r.start + delay + length });
        h.busy.sort((a, b) => a.start - b.start);
      }
      reserved += Math.min(length, span - r.start - delay) * hosts.length;
    }
    let room = budget;
    const wanted: { h: SimHost; to: 'on' | 'off' }[] = [];
    for (const [i, h] of pool.entries()) {
      if (h.state === 'booting' && (h.deadline ?? 0) <= now) {
        Object.assign(h, { state: 'on', deadline: null, changedAt: now });
      }
      if (h.state === 'stopping')
        Object.assign(h, { state: 'off', deadline: null, changedAt: now });
      while (h.busy.length > 0 && h.busy[0].end <= now) h.busy.shift();
      // A lease starting in this step on a host not on would have waited.
      if (h.busy.some((b) => b.start > now - stepMs && b.start <= now) && h.state !== 'on') {
        lateStarts++;
      }
      const busy = h.busy.filter((b) => b.start - s.leadMs < now + horizon);
      const plan = planHost(
        {
          state: h.state,
          changedAt: h.changedAt,
          keepOn: !o.powerPlan || i >= o.hosts - o.alwaysOn,
          busy,
        },
        now,
        now + horizon,
        s,
      );
      if (plan.want === 'on' && h.state === 'off') wanted.unshift({ h, to: 'on' });
      if (plan.want === 'off' && h.state === 'on') wanted.push({ h, to: 'off' });
    }
    for (const { h, to } of wanted) {
      if (room-- <= 0) break;
      transitions++;
      if (to === 'on')
        Object.assign(h, { state: 'booting', deadline: now + s.bootMs, changedAt: now });
      else Object.assign(h, { state: 'stopping', deadline: now + s.bootMs, changedAt: now });
    }
    // Off time counts from the step after the power-off (a stop takes its time).
    for (const h of pool) if (h.state === 'off') h.offMs += stepMs;
  }
  const total = o.hosts * span;
  return {
    targetUse: o.targetUse,
    achievedUse: reserved / total,
    savedShare: pool.reduce((a, h) => a + h.offMs, 0) / total,
    leases: asked.length,
    postponed,
    delayHours: delayMs / HOUR,
    refused,
    transitionsPerHostDay: transitions / o.hosts / o.days,
    lateStarts,
  };
}
