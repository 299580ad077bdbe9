/** Per-project limits on physical hosts, pure: what a project holds, at once and per period. */

/** One host held by one of the project's leases, over [start, end). */
export interface HostSpan {
  leaseId: string;
  start: Date;
  end: Date;
}

export interface Peak {
  /** Hosts held at `at`, this lease's included. */
  total: number;
  /** Of those, this lease's. */
  own: number;
  at: Date;
}

/** The instant within `window` at which the project holds the most hosts. */
export function peakHosts(spans: HostSpan[], window: HostSpan): Peak {
  const instants = [
    window.start,
    ...spans.map((s) => s.start).filter((t) => t > window.start && t < window.end),
  ];
  let best: Peak = { total: 0, own: 0, at: window.start };
  for (const at of instants) {
    const holding = spans.filter((s) => s.start <= at && s.end > at);
    const own = holding.filter((s) => s.leaseId === window.leaseId).length;
    if (holding.length > best.total) best = { total: holding.length, own, at };
  }
  return best;
}

/** Periods of `days` days, aligned on Monday 1970-01-05 00:00 UTC (7 days: ISO weeks). */
const ANCHOR = Date.UTC(1970, 0, 5);
const DAY = 86_400_000;
const HOUR = 3_600_000;

export interface Period {
  start: Date;
  end: Date;
}

/** Every period that `window` overlaps. */
export function periodsOf(window: Period, days: number): Period[] {
  const length = days * DAY;
  const first = Math.floor((window.start.getTime() - ANCHOR) / length);
  const last = Math.floor((window.end.getTime() - 1 - ANCHOR) / length);
  const out: Period[] = [];
  for (let k = first; k <= last; k++) {
    out.push({ start: new Date(ANCHOR + k * length), end: new Date(ANCHOR + (k + 1) * length) });
  }
  return out;
}

export interface PeriodUse extends Period {
  /** Host-hours held within the period, this lease's included. */
  total: number;
  own: number;
}

/** The host-hours held in each period (each span clipped to it), the fullest first. */
export function hostHoursByPeriod(
  spans: HostSpan[],
  periods: Period[],
  leaseId: string,
): PeriodUse[] {
  const uses = periods.map((p) => {
    let total = 0;
    let own = 0;
    for (const s of spans) {
      const from = Math.max(s.start.getTime(), p.start.getTime());
      const to = Math.min(s.end.getTime(), p.end.getTime());
      if (to <= from) continue;
      total += (to - from) / HOUR;
      if (s.leaseId === leaseId) own += (to - from) / HOUR;
    }
    return { ...p, total, own };
  });
  return uses.sort((a, b) => b.total - a.total);
}
