import 'vis-timeline/styles/vis-timeline-graph2d.min.css';
import 'uplot/dist/uPlot.min.css';
import '../style.css';
import { ApiError, get, setToken, token } from './api';
import { Booking } from './booking';
import { Calendar } from './calendar';
import { CapacityChart, showPowerPlan } from './capacity';
import { DAY, HOUR } from './dates';
import { showDetails } from './details';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const status = $('status');
const say = (text: string) => {
  status.textContent = text;
};
const fail = (what: string) => (error: unknown) =>
  say(`${what}: ${error instanceof Error ? error.message : String(error)}`);

const ZOOM: Record<string, number> = {
  hours: 12 * HOUR,
  day: DAY,
  week: 7 * DAY,
  month: 31 * DAY,
  months: 182 * DAY,
};

/** Whether this caller gets the API at all (401: a token is needed) and is an admin. */
async function whoAmI(): Promise<'signed-out' | 'admin' | 'project'> {
  try {
    await get('/v1/leases', { limit: 1 });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return 'signed-out';
    throw error;
  }
  try {
    await get('/v1/os-hosts', { hypervisor_properties: '["==", "$id", "0"]' });
    return 'admin';
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) return 'project';
    throw error;
  }
}

async function start(): Promise<void> {
  const signIn = $<HTMLFormElement>('sign-in');
  const role = await whoAmI();
  signIn.hidden = role !== 'signed-out' && token() === null;
  $('who').textContent =
    role === 'signed-out'
      ? 'Sign in with a token to see the pool.'
      : role === 'admin'
        ? 'Admin view: every lease.'
        : "Project view: your leases named, others' as reserved.";
  $<HTMLButtonElement>('sign-out').hidden = token() === null;
  if (role === 'signed-out') {
    $<HTMLInputElement>('token').focus();
    return;
  }
  const main = $('app');
  main.hidden = false;
  document.body.dataset.role = role;
  const calendar = new Calendar($('calendar'));
  calendar.canListHosts = role === 'admin';
  calendar.onLoaded = (summary) => {
    $('calendar-summary').textContent = summary;
    document.body.dataset.loaded = 'true';
  };
  const details = $<HTMLDialogElement>('details');
  calendar.onSelect = (bar) => void showDetails(details, bar).catch(fail('Lease'));
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-zoom]')) {
    button.addEventListener('click', () => calendar.zoom(ZOOM[button.dataset.zoom ?? 'week']));
  }
  $('now').addEventListener('click', () => calendar.jumpToNow());
  const filter = $<HTMLFormElement>('filter');
  if (role !== 'admin') {
    filter.querySelector('input')?.setAttribute('disabled', '');
    filter.querySelector('button')?.setAttribute('disabled', '');
    $('filter-note').textContent = 'Filtering hosts needs an admin (hosts are listed to admins).';
  }
  filter.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = (filter.elements.namedItem('requirement') as HTMLInputElement).value.trim();
    void calendar.setFilter(text).then(() => say('Filter applied'), fail('Filter'));
  });
  new Booking($('find'), $('windows'), $<HTMLDialogElement>('confirm'), calendar, say);
  const capacity = new CapacityChart($('capacity-chart'), $('capacity-table'));
  const drawCapacity = () => {
    const w = calendar.timeline.getWindow();
    void capacity
      .show(w.start, w.end, calendar.filter)
      .then((summary) => ($('capacity-summary').textContent = summary), fail('Capacity'));
  };
  $('capacity-refresh').addEventListener('click', drawCapacity);
  await calendar.refresh().catch(fail('Calendar'));
  drawCapacity();
  if (role === 'admin') {
    $('power').hidden = false;
    void showPowerPlan($('power-plan')).catch(fail('Power plan'));
  }
}

$<HTMLFormElement>('sign-in').addEventListener('submit', (e) => {
  e.preventDefault();
  setToken($<HTMLInputElement>('token').value.trim());
  location.reload();
});
$('sign-out').addEventListener('click', () => {
  setToken(null);
  location.reload();
});
void start().catch(fail('Climate'));
