/**
 * The power plan of one host, as a pure function of the backlog: when it may be off and
 * when it must be back on. Times are epoch milliseconds. The manager, the API's report
 * and the year-long simulation all call this same function.
 */
export type PowerState = 'on' | 'off' | 'booting' | 'stopping';

export interface PowerSettings {
  /** A host is powered off only for an idle stretch longer than this (and kept on this long). */
  idleMs: number;
  /** Hosts are prepared this long before a lease's start (PROVISIONING_LEAD_MINUTES). */
  leadMs: number;
  /** How long a powered-off host takes to be on again. */
  bootMs: number;
}

export interface Interval {
  start: number;
  end: number;
}

export interface HostSituation {
  state: PowerState;
  /** When the state last changed. */
  changedAt: number;
  /** Kept on whatever the backlog: out of the reservation pool, failed, marked always on. */
  keepOn: boolean;
  /** What the backlog holds on the host (allocations, slots), widened by the cleaning time. */
  busy: Interval[];
}

export interface Transition {
  at: number;
  to: 'on' | 'off';
}

export interface HostPlan {
  /** What the host should be now. */
  want: 'on' | 'off';
  /** Planned changes in [now, until), in time order. */
  transitions: Transition[];
  /** Milliseconds the host is planned off in [now, until). */
  offMs: number;
}

/** When the host is needed: each busy stretch from its lead time on, merged. */
export function needs(busy: Interval[], now: number, leadMs: number): Interval[] {
  const sorted = busy
    .filter((b) => b.end > now)
    .map((b) => ({ start: b.start - leadMs, end: b.end }))
    .sort((a, b) => a.start - b.start);
  const merged: Interval[] = [];
  for (const n of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && n.start <= last.end) last.end = Math.max(last.end, n.end);
    else merged.push({ ...n });
  }
  return merged;
}

/**
 * The stretches in which the host may be off, from `now` on. A host that is off (or
 * stopping) stays off until its boot time before it is needed. A host that is on goes
 * off only for an idle stretch longer than `idleMs`, and not before it has been on for
 * `idleMs` (no flapping), and it is back on its boot time before the next need.
 */
export function offWindows(h: HostSituation, now: number, s: PowerSettings): Interval[] {
  if (h.keepOn) return [];
  const wanted = needs(h.busy, now, s.leadMs);
  const windows: Interval[] = [];
  const isOff = isOffState(h.state);
  // When the host was last switched on: its state change, now for an off host needed
  // now, or a planned power on.
  let onSince = isOff ? now : h.changedAt;
  let cursor = now;
  for (let i = 0; i <= wanted.length; i++) {
    const next = wanted[i];
    const gapEnd = next === undefined ? Infinity : next.start;
    if (gapEnd > cursor) {
      const onAt = gapEnd - s.bootMs;
      if (isOff && cursor === now && windows.length === 0) {
        // Already off: stays off until it must boot.
        if (onAt > now) windows.push({ start: now, end: onAt });
      } else {
        const from = Math.max(cursor, onSince + s.idleMs);
        if (gapEnd - cursor > s.idleMs && onAt > from) windows.push({ start: from, end: onAt });
      }
      const last = windows[windows.length - 1];
      if (last !== undefined && last.end === onAt) onSince = onAt;
    }
    if (next !== undefined) cursor = Math.max(cursor, next.end);
  }
  return windows;
}

/** The host's plan over [now, until): what it should be now, its transitions, time off. */
export function planHost(h: HostSituation, now: number, until: number, s: PowerSettings): HostPlan {
  return planOfWindows(offWindows(h, now, s), isOffState(h.state), now, until);
}

/** Off, or on its way off: the plan counts it off until it must boot. */
export function isOffState(state: PowerState): boolean {
  return state === 'off' || state === 'stopping';
}

/**
 * The plan over [now, until) of a host whose off windows from `now` on are `windows`
 * (as offWindows gives them, or stored ones clipped to start no earlier than `now`).
 */
export function planOfWindows(
  windows: Interval[],
  isOff: boolean,
  now: number,
  until: number,
): HostPlan {
  const offNow = windows.some((w) => w.start <= now && now < w.end);
  const transitions: Transition[] = [];
  if (isOff && !offNow) transitions.push({ at: now, to: 'on' });
  let offMs = 0;
  for (const w of windows) {
    if (w.start >= until) break;
    if (!(isOff && w.start === now)) transitions.push({ at: w.start, to: 'off' });
    if (w.end < until) transitions.push({ at: w.end, to: 'on' });
    offMs += Math.min(w.end, until) - Math.max(w.start, now);
  }
  return { want: offNow ? 'off' : 'on', transitions, offMs };
}

/**
 * When a host in `state` can be ready for a lease: now when it is on; else once it is
 * on (booting: its deadline; off: a boot from now; stopping: a boot after it stops).
 */
export function readyAt(
  state: PowerState,
  deadline: number | null,
  now: number,
  bootMs: number,
): number {
  if (state === 'on') return now;
  if (state === 'off') return now + bootMs;
  const due = deadline ?? now;
  return Math.max(state === 'stopping' ? due + bootMs : due, now);
}
