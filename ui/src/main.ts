import 'vis-timeline/styles/vis-timeline-graph2d.min.css';
import 'uplot/dist/uPlot.min.css';
import '../style.css';
import { ApiError, setToken, token } from './api';
import { Booking } from './booking';
import { Calendar } from './calendar';
import { CapacityChart } from './capacity';
import { showPowerPlan } from './power';
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

function signedOut(): void {
  $<HTMLFormElement>('sign-in').hidden = false;
  $('who').textContent = 'Sign in with a token to see the pool.';
  $<HTMLInputElement>('token').focus();
}

async function start(): Promise<void> {
  $<HTMLButtonElement>('sign-out').hidden = token() === null;
  const calendar = new Calendar($('calendar'), $('row-scroll'), $('row-position'));
  calendar.onLoaded = (summary) => {
    $('calendar-summary').textContent = summary;
    // When the first view was drawn, in ms from the navigation (the scale test reads it).
    document.body.dataset.drawnAt ??= String(Math.round(performance.now()));
    document.body.dataset.loaded = 'true';
  };
  const details = $<HTMLDialogElement>('details');
  calendar.onSelect = (bar) => void showDetails(details, bar).catch(fail('Lease'));
  $('app').hidden = false;
  try {
    await calendar.refresh();
  } catch (error) {
    $('app').hidden = true;
    if (error instanceof ApiError && error.status === 401) return signedOut();
    throw error;
  }
  const admin = calendar.canListHosts === true;
  document.body.dataset.role = admin ? 'admin' : 'project';
  $('who').textContent = admin
    ? 'Admin view: every lease.'
    : "Project view: your leases named, others' as reserved where policy shows them.";
  for (const button of document.querySelectorAll<HTMLButtonElement>('[data-zoom]')) {
    button.addEventListener('click', () => calendar.zoom(ZOOM[button.dataset.zoom ?? 'week']));
  }
  $('now').addEventListener('click', () => calendar.jumpToNow());
  const filter = $<HTMLFormElement>('filter');
  if (!admin) {
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
  drawCapacity();
  // The power plan is the admins' (the API says: a 403 hides it).
  showPowerPlan($('power-plan'), $('power-chart')).then(
    () => ($('power').hidden = false),
    (error: unknown) => {
      if (!(error instanceof ApiError && error.status === 403)) fail('Power plan')(error);
    },
  );
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
