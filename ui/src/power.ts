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

/** Hosts the chart and the table show at most (the figures above them are the fleet's). */
const MAX_HOSTS = 5000;

/** The plan with up to MAX_HOSTS hosts, a page of 1,000 at a time. */
async function fetchPlan(): Promise<{ plan: PowerPlan; complete: boolean }> {
  const plan = await get<PowerPlan>('/v1/power-plan', { limit: 1000 });
  let next = plan.next;
  while (next !== undefined && plan.hosts.length < MAX_HOSTS) {
    const page = await get<PowerPlan>(next);
    plan.hosts.push(...page.hosts);
    next = page.next;
  }
  return { plan, complete: next === undefined };
}

/** The power plan (admins): a chart of hosts on and off, and each host's transitions. */
export async function showPowerPlan(target: HTMLElement, chart: HTMLElement): Promise<void> {
  const { plan, complete } = await fetchPlan();
  const counts = Object.entries(plan.power_states).filter(([, n]) => n > 0);
  const p = document.createElement('p');
  p.textContent =
    `Power plan ${plan.enabled ? 'on' : 'off'}. Hosts ` +
    counts.map(([state, n]) => `${state}: ${n}`).join(', ') +
    `. Host-hours off: past 30 days ${plan.host_hours_off.past_30_days}, ` +
    `next 30 days ${plan.host_hours_off.next_30_days}.` +
    (complete ? '' : ` Chart and table: the first ${plan.hosts.length} hosts.`);
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
