import { offWindows, planHost, planOfWindows, type HostSituation } from './power-plan.js';
import { RECHECK_MAX_MS, recheckAt, storedPlan, type StoredWindow } from './stored-plan.js';

const MIN = 60_000;
const settings = [
  { idleMs: 60 * MIN, leadMs: 10 * MIN, bootMs: 5 * MIN },
  { idleMs: 30 * MIN, leadMs: 0, bootMs: 10 * MIN },
  { idleMs: 5 * MIN, leadMs: 15 * MIN, bootMs: 20 * MIN },
];

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function situation(rnd: () => number, now: number): HostSituation {
  const states = ['on', 'off', 'booting', 'stopping'] as const;
  const busy = [];
  let at = now - 300 * MIN + Math.floor(rnd() * 600) * MIN;
  for (let i = Math.floor(rnd() * 5); i > 0; i--) {
    const len = (1 + Math.floor(rnd() * 180)) * MIN;
    busy.push({ start: at, end: at + len });
    at += len + Math.floor(rnd() * 240) * MIN;
  }
  return {
    state: states[Math.floor(rnd() * 4)],
    changedAt: now - Math.floor(rnd() * 120) * MIN,
    keepOn: rnd() < 0.1,
    busy,
  };
}

/** Stored windows as the report reads them at `t`: clipped to start at `t`, ended ones gone. */
function clipped(windows: StoredWindow[], t: number) {
  return windows
    .filter((w) => w.end === null || w.end > t)
    .map((w) => ({ start: Math.max(w.start, t), end: w.end ?? Infinity }));
}

describe('stored plans', () => {
  it('should equal a fresh plan at every minute until their recheck time when nothing changes', () => {
    const rnd = random(7);
    const now = Date.UTC(2031, 0, 1);
    let checked = 0;
    const mismatches: unknown[] = [];
    for (let i = 0; i < 1500; i++) {
      const s = settings[i % settings.length];
      const h = situation(rnd, now);
      const stored = storedPlan(h, h, now, s);
      expect(stored.recheckAt).toBeGreaterThanOrEqual(now);
      expect(stored.recheckAt).toBeLessThanOrEqual(now + RECHECK_MAX_MS);
      // Every 7 minutes up to the recheck (at most a day: the stored horizon is far
      // beyond), and the last millisecond before it.
      const last = Math.min(stored.recheckAt, now + 24 * 60 * MIN);
      const times = [last - 1];
      for (let t = now; t < last; t += 7 * MIN) times.push(t);
      for (const t of times.filter((t) => t >= now)) {
        const until = t + 30 * 24 * 60 * MIN;
        const fresh = planHost(h, t, until, s);
        const isOff = h.state === 'off' || h.state === 'stopping';
        const kept = planOfWindows(clipped(stored.windows, t), isOff, t, until);
        if (JSON.stringify(kept) !== JSON.stringify(fresh))
          mismatches.push({ i, t, h, kept, fresh });
        checked++;
      }
    }
    expect(mismatches.slice(0, 3)).toEqual([]);
    expect(checked).toBeGreaterThan(10_000);
  });

  it('should look at an off host that must boot at every run', () => {
    const now = 1_000 * MIN;
    const s = settings[0];
    const h: HostSituation = {
      state: 'off',
      changedAt: now - 100 * MIN,
      keepOn: false,
      busy: [{ start: now + 5 * MIN, end: now + 20 * MIN }],
    };
    // Needed now; once on, idle from now (not from its use's end) before going off again.
    expect(offWindows(h, now, s)).toEqual([{ start: now + 60 * MIN, end: Infinity }]);
    expect(recheckAt(h, 'on', now, s)).toBe(now);
    expect(storedPlan(h, h, now, s)).toMatchObject({ act: 'on', nowTo: 'on', want: 'on' });
  });

  it('should tell the manager to switch off an idle host the report keeps on for its servers', () => {
    const now = 1_000 * MIN;
    const s = settings[0];
    const h: HostSituation = { state: 'on', changedAt: 0, keepOn: false, busy: [] };
    const plan = storedPlan({ ...h, keepOn: true }, h, now, s);
    expect(plan).toMatchObject({ keepOn: true, want: 'on', nowTo: null, act: 'off', windows: [] });
    expect(plan.neededAt).toBe(Infinity);
  });
});
