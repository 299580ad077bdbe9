import uPlot from 'uplot';
import { get, type CapacityStep, type PowerPlan } from './api';
import { parseWire, show, toInput } from './dates';

/** At most this many steps per chart: enough for a smooth line, cheap to ask for. */
const STEPS = 150;

function table(caption: string, head: string[], rows: string[][]): HTMLTableElement {
  const t = document.createElement('table');
  const c = t.createCaption();
  c.textContent = caption;
  const tr = t.createTHead().insertRow();
  for (const h of head) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = h;
    tr.append(th);
  }
  const body = t.createTBody();
  for (const r of rows) {
    const row = body.insertRow();
    for (const cell of r) row.insertCell().textContent = cell;
  }
  return t;
}

/** The capacity plan over a window (free and reserved hosts per step), with uPlot. */
export class CapacityChart {
  private plot: uPlot | null = null;

  constructor(
    private readonly chart: HTMLElement,
    private readonly text: HTMLElement,
  ) {}

  async show(start: Date, end: Date, requirement: string): Promise<string> {
    const minutes = Math.max(1, Math.ceil((end.getTime() - start.getTime()) / STEPS / 60_000));
    const { capacity } = await get<{ capacity: CapacityStep[] }>('/v1/os-hosts/capacity', {
      start: toInput(start),
      end: toInput(end),
      step: `${minutes}m`,
      resource_properties: requirement,
    });
    const x = capacity.map((s) => parseWire(s.start_date).getTime() / 1000);
    const data: uPlot.AlignedData = [
      x,
      capacity.map((s) => s.free),
      capacity.map((s) => s.reserved),
    ];
    const stepped = uPlot.paths.stepped?.({ align: 1 });
    const opts: uPlot.Options = {
      width: Math.max(320, this.chart.clientWidth),
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { label: 'hosts' }],
      series: [
        { label: 'time (UTC)' },
        { label: 'free', stroke: '#1a7f37', fill: 'rgba(26,127,55,0.15)', paths: stepped },
        { label: 'reserved', stroke: '#0b5cad', paths: stepped, width: 2 },
      ],
    };
    this.plot?.destroy();
    this.plot = new uPlot(opts, data, this.chart);
    const least = capacity.reduce((m, s) => Math.min(m, s.free), Infinity);
    const summary =
      capacity.length === 0
        ? 'No step.'
        : `Capacity from ${show(start)} to ${show(end)}: ${capacity[0].total} matching hosts; ` +
          `fewest free ${least}, most reserved ${Math.max(...capacity.map((s) => s.reserved))}.`;
    this.chart.setAttribute('aria-label', summary);
    this.text.replaceChildren(
      table(
        'Capacity per step',
        ['From (UTC)', 'Total', 'Reserved', 'Free'],
        capacity.map((s) => [
          show(parseWire(s.start_date)),
          String(s.total),
          String(s.reserved),
          String(s.free),
        ]),
      ),
    );
    return summary;
  }
}

/** The power plan (admins): state of each host and its planned transitions. */
export async function showPowerPlan(target: HTMLElement): Promise<void> {
  const plan = await get<PowerPlan>('/v1/power-plan');
  const counts = new Map<string, number>();
  for (const h of plan.hosts) counts.set(h.power_state, (counts.get(h.power_state) ?? 0) + 1);
  const p = document.createElement('p');
  p.textContent =
    `Power plan ${plan.enabled ? 'on' : 'off'}. Hosts ` +
    [...counts].map(([state, n]) => `${state}: ${n}`).join(', ') +
    `. Host-hours off: past 30 days ${plan.host_hours_off.past_30_days}, ` +
    `next 30 days ${plan.host_hours_off.next_30_days}.`;
  const planned = plan.hosts.filter((h) => h.transitions.length > 0 || h.power_state !== 'on');
  const rows = planned
    .slice(0, 200)
    .map((h) => [
      h.hypervisor_hostname,
      h.power_state + (h.always_on ? ' (always on)' : ''),
      h.transitions.map((t) => `${t.to} at ${show(parseWire(t.at))}`).join('; ') || '—',
    ]);
  target.replaceChildren(
    p,
    table(
      `Hosts off, booting or with planned transitions (${planned.length})`,
      ['Host', 'State', 'Transitions'],
      rows,
    ),
  );
}
