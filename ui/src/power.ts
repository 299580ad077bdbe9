import uPlot from 'uplot';
import { get, type PowerPlan } from './api';
import { table } from './capacity';
import { DAY, HOUR, parseWire, show } from './dates';

/** Hosts on (or booting) and off over time, from now through the planned transitions. */
function onOverTime(plan: PowerPlan): uPlot.AlignedData {
  const now = Date.now();
  const state = new Map<string, boolean>();
  for (const h of plan.hosts) {
    state.set(h.id, h.power_state === 'on' || h.power_state === 'booting');
  }
  const count = () => [...state.values()].filter(Boolean).length;
  const x = [now / 1000];
  const on = [count()];
  const events = plan.hosts
    .flatMap((h) => h.transitions.map((t) => ({ host: h.id, at: parseWire(t.at), to: t.to })))
    .sort((a, b) => a.at.getTime() - b.at.getTime());
  for (const e of events) {
    state.set(e.host, e.to === 'on');
    x.push(Math.max(now, e.at.getTime()) / 1000);
    on.push(count());
  }
  const last = x[x.length - 1] * 1000;
  x.push(Math.max(now + DAY, last + HOUR) / 1000);
  on.push(count());
  return [x, on, on.map((n) => plan.hosts.length - n)];
}

/** The power plan (admins): a chart of hosts on and off, and each host's transitions. */
export async function showPowerPlan(target: HTMLElement, chart: HTMLElement): Promise<void> {
  const plan = await get<PowerPlan>('/v1/power-plan');
  const counts = new Map<string, number>();
  for (const h of plan.hosts) counts.set(h.power_state, (counts.get(h.power_state) ?? 0) + 1);
  const p = document.createElement('p');
  p.textContent =
    `Power plan ${plan.enabled ? 'on' : 'off'}. Hosts ` +
    [...counts].map(([state, n]) => `${state}: ${n}`).join(', ') +
    `. Host-hours off: past 30 days ${plan.host_hours_off.past_30_days}, ` +
    `next 30 days ${plan.host_hours_off.next_30_days}.`;
  // Shown before drawing: the chart takes its section's width.
  target.closest('section')?.removeAttribute('hidden');
  const stepped = uPlot.paths.stepped?.({ align: 1 });
  chart.replaceChildren();
  new uPlot(
    {
      width: Math.max(320, chart.clientWidth),
      height: 180,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { label: 'hosts' }],
      series: [
        { label: 'time (UTC)' },
        { label: 'on or booting', stroke: '#1a7f37', paths: stepped, width: 2 },
        { label: 'off', stroke: '#5b6168', paths: stepped, width: 2 },
      ],
    },
    onOverTime(plan),
    chart,
  );
  chart.setAttribute('aria-label', `Hosts on and off over time. ${p.textContent}`);
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
