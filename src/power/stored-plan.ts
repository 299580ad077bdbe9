/**
 * A host's plan as the power plan keeps it between runs (power_plan, power_windows), so a
 * run recomputes only the hosts whose situation changed or whose plan can change by the
 * clock alone. Pure: the same planner (offWindows) as the report and the simulation.
 */
import {
  isOffState,
  offWindows,
  type HostSituation,
  type Interval,
  type PowerSettings,
} from './power-plan.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** Off windows are kept this far ahead: the report's 30 days, plus the day before a recheck. */
export const STORED_HORIZON_MS = 32 * DAY;

/** Every plan is looked at again within this, so its stored horizon never runs out. */
export const RECHECK_MAX_MS = DAY;

/** A stored off window; `end` null: it lasts past the stored horizon. */
export interface StoredWindow {
  start: number;
  end: number | null;
}

export interface StoredPlan {
  /** Report: kept on whatever the backlog (not in the plan). */
  keepOn: boolean;
  /** Report: what the host should be now. */
  want: 'on' | 'off';
  /** Report: a transition due now (an off host to boot, an on host to switch off). */
  nowTo: 'on' | 'off' | null;
  /** Manager: the transition to begin now, if the budget allows (servers asked again). */
  act: 'on' | 'off' | null;
  /** Manager: when the host is next needed, for the order of power-ons. */
  neededAt: number;
  /** When the plan can change with nothing else changing: it is computed again then. */
  recheckAt: number;
  /** Report: off windows from now, within the stored horizon. */
  windows: StoredWindow[];
}

/** How far ahead a decision looks: the first idle stretch, a boot and the lead time. */
export function decisionHorizonMs(s: PowerSettings): number {
  return s.idleMs + s.bootMs + 2 * s.leadMs + MINUTE;
}

/** How far ahead the backlog is read for a stored plan: its windows are then exact. */
export function readHorizonMs(s: PowerSettings): number {
  return STORED_HORIZON_MS + s.leadMs + Math.max(s.idleMs, s.bootMs) + MINUTE;
}

const offAt = (windows: Interval[], now: number) =>
  windows.some((w) => w.start <= now && now < w.end);

/**
 * The stored plan of a host, from its situation as the report sees it (a host last seen
 * with servers kept on) and as the manager does (it asks the compute service again).
 */
export function storedPlan(
  report: HostSituation,
  manager: HostSituation,
  now: number,
  s: PowerSettings,
): StoredPlan {
  const windows = offWindows(report, now, s);
  const own = manager.keepOn === report.keepOn ? windows : offWindows(manager, now, s);
  const isOff = isOffState(report.state);
  const want = offAt(windows, now) ? 'off' : 'on';
  const managerWant = offAt(own, now) ? 'off' : 'on';
  const horizon = now + STORED_HORIZON_MS;
  return {
    keepOn: report.keepOn,
    want,
    nowTo: isOff && want === 'on' ? 'on' : !isOff && want === 'off' ? 'off' : null,
    act:
      managerWant === 'on' && report.state === 'off'
        ? 'on'
        : managerWant === 'off' && report.state === 'on'
          ? 'off'
          : null,
    neededAt: neededAt(manager, now, s),
    recheckAt: Math.min(recheckAt(report, want, now, s), recheckAt(manager, managerWant, now, s)),
    windows: windows
      .filter((w) => w.start < horizon)
      .map((w) => ({ start: w.start, end: w.end >= horizon ? null : w.end })),
  };
}

/** As the manager orders power-ons: the first use within the decision horizon, less the lead. */
function neededAt(h: HostSituation, now: number, s: PowerSettings): number {
  if (h.keepOn) return -Infinity;
  const until = now + decisionHorizonMs(s);
  const starts = h.busy.filter((b) => b.end > now && b.start < until).map((b) => b.start);
  return Math.min(...starts) - s.leadMs;
}

/**
 * The next time after `now` at which the plan of an unchanged host can differ from its
 * stored one (clipped to the time): between these, offWindows gives the same windows
 * but for the first one's start, which the clipping takes care of. A host off (or
 * stopping) that should be on is planned from "now" on (it boots now, idles from then):
 * it is looked at every run until it is on.
 */
export function recheckAt(
  h: HostSituation,
  want: 'on' | 'off',
  now: number,
  s: PowerSettings,
): number {
  if (h.keepOn) return now + RECHECK_MAX_MS;
  if (isOffState(h.state) && want === 'on') return now;
  const times = [h.changedAt + s.idleMs];
  for (const b of h.busy) {
    const needed = b.start - s.leadMs;
    times.push(needed, needed - s.bootMs, needed - s.idleMs, b.end);
  }
  return Math.min(now + RECHECK_MAX_MS, ...times.filter((t) => t > now));
}
