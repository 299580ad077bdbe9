import { DataSet, moment, Timeline } from 'vis-timeline/standalone';
import type { DataGroup, DataItem, TimelineOptions } from 'vis-timeline/standalone';
import { ApiError, get, type Allocation, type Host, type Lease } from './api';
import { DAY, HOUR, parseWire, show, toInput } from './dates';

/** An allocation shown less than this before its end is "ending soon". */
const ENDING_SOON = 24 * HOUR;
const TOPOLOGY = ['rack', 'row', 'room'];

export interface Bar {
  lease: Lease | null;
  leaseId: string | null;
  host: string;
  start: Date;
  end: Date;
  slots?: number;
  status: string;
}

/** The status class a bar is drawn with (the legend names the same ones). */
export function statusOf(lease: Lease | null, end: Date, now: number): string {
  if (lease === null) return 'reserved';
  if (lease.degraded) return 'degraded';
  if (lease.status === 'ACTIVE') return end.getTime() - now < ENDING_SOON ? 'ending' : 'active';
  if (['PENDING', 'CREATING', 'STARTING', 'UPDATING'].includes(lease.status)) return 'pending';
  if (lease.status === 'ERROR') return 'error';
  return 'ended';
}

const LABEL: Record<string, string> = {
  reserved: 'reserved (another project)',
  degraded: 'degraded',
  ending: 'ending soon',
  active: 'active',
  pending: 'pending',
  error: 'error',
  ended: 'ended',
};

function topologyOf(host: Host): string {
  for (const level of TOPOLOGY) {
    const value = host[level];
    if (typeof value === 'string' && value !== '') return `${level} ${value}`;
  }
  return 'no rack';
}

/** Whole hosts and instance slots of the visible window on a vis-timeline, hosts as rows. */
export class Calendar {
  readonly timeline: Timeline;
  private readonly items = new DataSet<DataItem & { bar?: Bar }>();
  private readonly groups = new DataSet<DataGroup>();
  private fetched: { start: number; end: number } | null = null;
  private hosts: Host[] | null = null;
  private loading: Promise<void> | null = null;
  private again = false;
  /** Admins list hosts (and filter them); a tenant sees the hosts its allocations name. */
  canListHosts = false;
  filter = '';
  onSelect: (bar: Bar) => void = () => undefined;
  onLoaded: (summary: string) => void = () => undefined;

  constructor(element: HTMLElement) {
    const now = Date.now();
    const options: TimelineOptions = {
      start: new Date(now - DAY),
      end: new Date(now + 13 * DAY),
      zoomMin: HOUR,
      zoomMax: 400 * DAY,
      stack: true,
      orientation: 'top',
      verticalScroll: true,
      maxHeight: '70vh',
      groupHeightMode: 'fixed',
      margin: { item: { horizontal: 0, vertical: 2 } },
      showCurrentTime: true,
      selectable: true,
      zoomKey: 'ctrlKey',
      moment: (date?: moment.MomentInput) => moment(date).utc(),
      template: (item: DataItem & { bar?: Bar }) => this.render(item),
      tooltip: { followMouse: false, overflowMethod: 'cap' },
      xss: { disabled: false },
    };
    this.timeline = new Timeline(element, this.items, this.groups, options);
    this.timeline.on('rangechanged', () => void this.refresh());
    this.timeline.on('select', (props: { items: string[] }) => {
      const item = this.items.get(props.items[0]);
      if (item?.bar) this.onSelect(item.bar);
    });
  }

  /** A bar's element: its lease, host and dates as its accessible name, focusable. */
  private render(item: DataItem & { bar?: Bar }): HTMLElement | string {
    const bar = item.bar;
    const span = document.createElement('span');
    if (bar === undefined) {
      span.textContent = String(item.content ?? '');
      return span;
    }
    const name = bar.lease?.name ?? (bar.leaseId === null ? 'reserved' : bar.leaseId);
    const slots = bar.slots === undefined ? '' : ` (${bar.slots} slot${bar.slots > 1 ? 's' : ''})`;
    span.textContent = `${name}${slots}`;
    span.className = 'bar-label';
    span.tabIndex = 0;
    span.setAttribute('role', 'button');
    span.setAttribute(
      'aria-label',
      `${name}${slots}, ${LABEL[bar.status]}, on ${bar.host}, ${show(bar.start)} to ${show(bar.end)}`,
    );
    span.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        this.onSelect(bar);
      }
    });
    return span;
  }

  setFilter(filter: string): Promise<void> {
    this.filter = filter;
    this.hosts = null;
    this.fetched = null;
    return this.refresh();
  }

  /** Refetches when the visible window leaves what was fetched (or when forced). */
  refresh(force = false): Promise<void> {
    if (force) this.fetched = null;
    if (this.loading !== null) {
      this.again = true;
      return this.loading;
    }
    this.loading = this.load().finally(() => {
      this.loading = null;
      if (this.again) {
        this.again = false;
        void this.refresh();
      }
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    const range = this.timeline.getWindow();
    const start = range.start.getTime();
    const end = range.end.getTime();
    if (this.fetched !== null && this.fetched.start <= start && this.fetched.end >= end) return;
    // A window's width either side, so a scroll or zoom out by one step needs no call.
    const width = end - start;
    const from = new Date(start - width);
    const to = new Date(end + width);
    const window = { start: toInput(from), end: toInput(to) };
    if (this.canListHosts && this.hosts === null) {
      const query = this.filter === '' ? {} : { resource_properties: this.filter };
      this.hosts = (await get<{ hosts: Host[] }>('/v1/os-hosts', query)).hosts;
    }
    const { leases } = await get<{ leases: Lease[] }>('/v1/leases', window);
    const allocations = await this.allocations(window, leases);
    this.draw(allocations, leases);
    this.fetched = { start: from.getTime(), end: to.getTime() };
  }

  /** Every host's (when policy allows the caller), else the caller's own leases' only. */
  private async allocations(window: Record<string, string>, leases: Lease[]) {
    try {
      return (await get<{ allocations: Allocation[] }>('/v1/os-hosts/allocations', window))
        .allocations;
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 403) throw error;
    }
    const own = await Promise.all(
      leases.map((l) =>
        get<{ allocations: Allocation[] }>('/v1/os-hosts/allocations', { lease_id: l.id }),
      ),
    );
    const byHost = new Map<string, Allocation>();
    for (const a of own.flatMap((o) => o.allocations)) {
      const entry = byHost.get(a.resource_id) ?? { ...a, reservations: [] };
      entry.reservations.push(...a.reservations);
      byHost.set(a.resource_id, entry);
    }
    return [...byHost.values()];
  }

  private draw(allocations: Allocation[], leases: Lease[]): void {
    const now = Date.now();
    const byId = new Map(leases.map((l) => [l.id, l]));
    const known = new Map<string, Host>((this.hosts ?? []).map((h) => [h.id, h]));
    const shown = this.canListHosts ? known : null;
    const items: (DataItem & { bar: Bar })[] = [];
    const rows = new Map<string, { name: string; label: string }>();
    for (const h of this.hosts ?? []) {
      const pool = h.pool === 'shared' ? 'shared pool' : 'reservation pool';
      rows.set(h.id, { name: h.hypervisor_hostname, label: `${pool} · ${topologyOf(h)}` });
    }
    for (const a of allocations) {
      if (shown !== null && !shown.has(a.resource_id)) continue;
      if (!rows.has(a.resource_id)) {
        rows.set(a.resource_id, { name: a.hypervisor_hostname, label: 'hosts' });
      }
      a.reservations.forEach((r, i) => {
        const lease = r.lease_id === null ? null : (byId.get(r.lease_id) ?? null);
        const start = parseWire(r.start_date);
        const end = parseWire(r.end_date);
        const status = statusOf(lease, end, now);
        const bar: Bar = {
          lease,
          leaseId: r.lease_id,
          host: a.hypervisor_hostname,
          start,
          end,
          slots: r.slots,
          status,
        };
        items.push({
          id: `${r.id ?? `anon-${i}`}@${a.resource_id}@${r.start_date}`,
          group: a.resource_id,
          start,
          end,
          content: '',
          className: `bar-${status}`,
          bar,
        });
      });
    }
    const parents = new Map<string, string[]>();
    for (const [id, row] of rows) {
      parents.set(row.label, [...(parents.get(row.label) ?? []), id]);
    }
    // treeLevel: vis-timeline outlines nested groups without one in red.
    const groups: (DataGroup & { treeLevel: number })[] = [];
    for (const [label, ids] of [...parents].sort(([a], [b]) => a.localeCompare(b))) {
      groups.push({
        id: `g:${label}`,
        content: label,
        nestedGroups: ids,
        className: 'pool-row',
        treeLevel: 1,
      });
      for (const id of ids) groups.push({ id, content: rows.get(id)?.name ?? id, treeLevel: 2 });
    }
    this.groups.clear();
    this.groups.add(groups);
    this.items.clear();
    this.items.add(items);
    // Said once the timeline has drawn them (its next "changed"), not when handed over.
    const summary = `${rows.size} hosts, ${items.length} allocations`;
    let said = false;
    const done = () => {
      if (said) return;
      said = true;
      this.timeline.off('changed', done);
      this.onLoaded(summary);
    };
    this.timeline.on('changed', done);
    setTimeout(done, 2000);
  }

  /** Free windows from the availability search, drawn behind the bars. */
  showWindows(windows: { start: Date; end: Date }[]): void {
    this.items.remove(this.items.getIds({ filter: (i) => String(i.id).startsWith('window:') }));
    this.items.add(
      windows.map((w, i) => ({
        id: `window:${i}`,
        start: w.start,
        end: w.end,
        type: 'background',
        className: 'free-window',
        content: `free window ${i + 1}`,
      })),
    );
  }

  zoom(spanMs: number): void {
    const range = this.timeline.getWindow();
    const centre = (range.start.getTime() + range.end.getTime()) / 2;
    this.timeline.setWindow(new Date(centre - spanMs / 2), new Date(centre + spanMs / 2), {
      animation: false,
    });
  }

  jumpToNow(): void {
    const range = this.timeline.getWindow();
    const span = range.end.getTime() - range.start.getTime();
    this.timeline.setWindow(
      new Date(Date.now() - span / 6),
      new Date(Date.now() + (5 * span) / 6),
      {
        animation: false,
      },
    );
  }

  focusOn(start: Date, end: Date): void {
    const pad = (end.getTime() - start.getTime()) / 4;
    this.timeline.setWindow(new Date(start.getTime() - pad), new Date(end.getTime() + pad));
  }
}
