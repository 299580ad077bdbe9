import uPlot from 'uplot';
import { get, type CapacityStep } from './api';
import { parseWire, show, toInput } from './dates';

/** At most this many steps per chart: enough for a smooth line, cheap to ask for. */
const STEPS = 150;

export function table(caption: string, head: string[], rows: string[][]): HTMLTableElement {
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
