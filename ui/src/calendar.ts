import { DataSet, DataView, moment, Timeline } from 'vis-timeline/standalone';
import type { DataGroup, DataItem, TimelineOptions } from 'vis-timeline/standalone';
import { ApiError, get, type Allocation, type Host, type Lease } from './api';
import { LABEL, statusOf, type Bar } from './bars';
import { DAY, HOUR, parseWire, show, toInput } from './dates';
import { floatingIpBars, listFloatingIps, type FloatingIp } from './floatingips';
import { RowPager, type Row } from './rows';

/** A call the API refuses this caller (403) answers null; any other failure throws. */
async function forbiddenAsNull<T>(call: Promise<T>): Promise<T | null> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) return null;
    throw error;
  }
}

const TOPOLOGY = ['rack', 'row', 'room'];

/** rack r2 before rack r10. */
const byName = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

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
  /** The items of the rows in view only: the timeline never walks the others. */
  private readonly inView: DataView<DataItem & { bar?: Bar }>;
  private readonly groups = new DataSet<DataGroup>();
  private readonly visible = new Set<string>();
  /** Each bar's label element by item id, the same on every redraw; and the focused one. */
  private readonly labels = new Map<string, HTMLElement>();
  private focused: string | null = null;
  readonly pager: RowPager;
  private fetched: { start: number; end: number } | null = null;
  /** The host rows (with their groups' headers) when floating-IP rows follow them. */
  private hostRowIds: string[] | null = null;
  private hosts: Host[] | null = null;
  /** The registered floating IPs (undefined: not asked yet; null: not listed to this caller). */
  private floatingIps: FloatingIp[] | null | undefined = undefined;
  private loading: Promise<void> | null = null;
  private again = false;
  /**
   * Whether the API lists hosts to this caller (admins; they filter them), known after the
   * first load; a tenant sees the hosts its allocations name.
   */
  canListHosts: boolean | null = null;
  filter = '';
  onSelect: (bar: Bar) => void = () => undefined;
  onLoaded: (summary: string) => void = () => undefined;

  constructor(element: HTMLElement, scroller: HTMLElement, position: HTMLElement) {
    const now = Date.now();
    this.inView = new DataView(this.items, {
      filter: (item) =>
        (item.type === 'background' && item.group === undefined) ||
        this.visible.has(String(item.group)),
    });
    const spacer = document.createElement('div');
    scroller.append(spacer);
    this.pager = new RowPager(scroller, spacer, position, element);
    this.pager.onChange = (rows) => this.showRows(rows);
    const options: TimelineOptions = {
      start: new Date(now - DAY),
      end: new Date(now + 13 * DAY),
      zoomMin: HOUR,
      zoomMax: 400 * DAY,
      stack: true,
      orientation: 'top',
      groupHeightMode: 'fixed',
      // No scrolling inside: the timeline is as tall as its page of rows (RowPager).
      horizontalScroll: true,
      margin: { item: { horizontal: 0, vertical: 2 } },
      showCurrentTime: true,
      selectable: true,
      zoomKey: 'ctrlKey',
      moment: (date?: moment.MomentInput) => moment(date).utc(),
      template: (item: DataItem & { bar?: Bar }) => this.render(item),
      tooltip: { followMouse: false, overflowMethod: 'cap' },
      xss: { disabled: false },
    };
    this.timeline = new Timeline(element, this.inView, this.groups, options);
    this.timeline.on('rangechanged', () => void this.refresh());
    // A redraw that rebuilt the focused bar's item moved its label: give the focus back.
    this.timeline.on('changed', () => {
      const label = this.focused === null ? undefined : this.labels.get(this.focused);
      if (label?.isConnected && document.activeElement === document.body) {
        label.focus({ preventScroll: true });
      }
    });
    this.timeline.on('select', (props: { items: string[] }) => {
      const item = this.inView.get(props.items[0]);
      if (item?.bar) this.onSelect(item.bar);
    });
  }

  /** A bar's element: its lease, host and dates as its accessible name, focusable. */
  private render(item: DataItem & { bar?: Bar }): HTMLElement | string {
    const bar = item.bar;
    if (bar === undefined) return String(item.content ?? '');
    // The same element on every redraw: a new one would be swapped in and drop the focus.
    const id = String(item.id);
    const drawn = this.labels.get(id);
    if (drawn !== undefined) return drawn;
    const span = document.createElement('span');
    this.labels.set(id, span);
    span.addEventListener('focus', () => (this.focused = id));
    span.addEventListener('blur', (e) => {
      if (e.relatedTarget !== null) this.focused = null;
    });
    const name = bar.lease?.name ?? (bar.leaseId === null ? 'reserved' : bar.leaseId);
    const slots = bar.slots === undefined ? '' : ` (${bar.slots} slot${bar.slots > 1 ? 's' : ''})`;
    span.textContent = `${name}${slots}`;
    span.className = 'bar-label';
    span.tabIndex = 0;
    span.setAttribute('role', 'button');
    const where = bar.address === undefined ? bar.host : `floating IP ${bar.address}`;
    const text = `${name}${slots}, ${LABEL[bar.status]}, on ${where}, ${show(bar.start)} to ${show(bar.end)}`;
    span.setAttribute('aria-label', text);
    span.title = text;
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
    if (force) {
      this.fetched = null;
      this.floatingIps = undefined;
    }
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
    // The first view asks for what it shows (and a tenth more); later ones for a window's
    // width either side, so a scroll or a zoom out by one step needs no call.
    const pad = this.fetched === null ? (end - start) / 10 : end - start;
    const from = new Date(start - pad);
    const to = new Date(end + pad);
    const window = { start: toInput(from), end: toInput(to) };
    const [, , { leases }, all] = await Promise.all([
      this.listHosts(),
      this.floatingIps === undefined
        ? listFloatingIps().then((list) => (this.floatingIps = list))
        : null,
      get<{ leases: Lease[] }>('/v1/leases', window),
      forbiddenAsNull(get<{ allocations: Allocation[] }>('/v1/os-hosts/allocations', window)),
    ]);
    const allocations = all?.allocations ?? (await this.ownAllocations(leases));
    this.draw(allocations, leases);
    this.fetched = { start: from.getTime(), end: to.getTime() };
  }

  /** The hosts (admins; the filter applies), or null when the API refuses this caller. */
  private async listHosts(): Promise<void> {
    if (this.canListHosts === false || this.hosts !== null) return;
    const query = this.filter === '' ? {} : { resource_properties: this.filter };
    const answer = await forbiddenAsNull(get<{ hosts: Host[] }>('/v1/os-hosts', query));
    this.canListHosts = answer !== null;
    this.hosts = answer?.hosts ?? null;
  }

  /** Without the host calendar (policy), the caller's own leases' allocations, one by one. */
  private async ownAllocations(leases: Lease[]): Promise<Allocation[]> {
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
    const shown = this.canListHosts === true ? known : null;
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
    const [hostRows, hostBars] = [rows.size, items.length];
    const addresses = floatingIpBars(this.floatingIps ?? null, leases, rows, items, now);
    const parents = new Map<string, string[]>();
    for (const [id, row] of rows) {
      parents.set(row.label, [...(parents.get(row.label) ?? []), id]);
    }
    const list: Row[] = [];
    // Hosts' groups first, then the floating IPs' (by network).
    const order = ([a]: [string, string[]], [b]: [string, string[]]) =>
      Number(a.startsWith('floating IPs')) - Number(b.startsWith('floating IPs')) || byName(a, b);
    for (const [label, ids] of [...parents].sort(order)) {
      list.push({ id: `g:${label}`, content: label, header: true });
      for (const id of ids) list.push({ id, content: rows.get(id)?.name ?? id, header: false });
    }
    this.items.clear();
    this.labels.clear();
    this.items.add(items);
    const firstFip = list.findIndex((r) => r.header && r.content.startsWith('floating IPs'));
    this.hostRowIds = firstFip < 0 ? null : list.slice(0, firstFip).map((r) => r.id);
    this.pager.set(list);
    // Said once the timeline has drawn them (its next "changed"), not when handed over.
    const held = items.length - hostBars;
    const fips = addresses === 0 ? '' : `; ${addresses} floating IPs, ${held} held`;
    const summary = `${hostRows} hosts, ${hostBars} allocations${fips}`;
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

  private showRows(rows: Row[]): void {
    this.visible.clear();
    for (const r of rows) this.visible.add(r.id);
    this.groups.clear();
    this.groups.add(
      rows.map((r) => ({ id: r.id, content: r.content, className: r.header ? 'pool-row' : '' })),
    );
    this.inView.refresh();
  }

  /**
   * Free windows from the availability search, drawn behind the bars: across the calendar,
   * or behind the host rows only when floating-IP rows follow them.
   */
  showWindows(windows: { start: Date; end: Date }[]): void {
    this.items.remove(this.items.getIds({ filter: (i) => String(i.id).startsWith('window:') }));
    const rows = this.hostRowIds ?? [undefined];
    this.items.add(
      windows.flatMap((w, i) =>
        rows.map((group, r) => ({
          id: `window:${i}:${group ?? ''}`,
          group,
          start: w.start,
          end: w.end,
          type: 'background',
          className: 'free-window',
          content: r === 0 ? `free window ${i + 1}` : '',
        })),
      ),
    );
    this.inView.refresh();
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
