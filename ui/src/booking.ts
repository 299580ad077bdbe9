import { call, get, type Lease, type Window } from './api';
import type { Calendar } from './calendar';
import { DAY, HOUR, parseWire, show, toInput } from './dates';

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: HOUR, d: DAY, w: 7 * DAY };

/** "90m", "2h", "1d", "1w": milliseconds, or null. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+)\s*([smhdw])\s*$/.exec(text);
  return m === null ? null : Number(m[1]) * UNITS[m[2]];
}

function field(form: HTMLFormElement, name: string): string {
  const el = form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null;
  return el?.value.trim() ?? '';
}

/** datetime-local text read as UTC (the page shows UTC throughout); empty is now. */
function fromField(text: string): Date {
  return text === '' ? new Date() : new Date(`${text}Z`);
}

interface Draft {
  summary: string;
  start: Date;
  end: Date;
  reservation: Record<string, unknown>;
}

/**
 * The find-and-book form: the availability windows of hosts or of instance slots on the
 * calendar, a confirmed POST.
 */
export class Booking {
  private draft: Draft | null = null;

  constructor(
    private readonly form: HTMLFormElement,
    private readonly results: HTMLElement,
    private readonly confirm: HTMLDialogElement,
    private readonly calendar: Calendar,
    private readonly say: (text: string) => void,
  ) {
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.find().catch((error: Error) => this.say(`Search failed: ${error.message}`));
    });
    confirm.querySelector('form')?.addEventListener('submit', (e) => {
      const submitter = e.submitter;
      if (!(submitter instanceof HTMLButtonElement) || submitter.value !== 'book') return;
      e.preventDefault();
      void this.book().catch((error: Error) => this.showError(error.message));
    });
  }

  private async find(): Promise<void> {
    const form = this.form;
    const duration = parseDuration(field(form, 'duration'));
    if (duration === null) throw new Error('the duration is a number and a unit: 90m, 2h, 1d');
    const from = fromField(field(form, 'from'));
    this.results.replaceChildren();
    const count = Number(field(form, 'count'));
    const requirement = field(form, 'requirement');
    const asked = {
      duration: `${Math.round(duration / 60_000)}m`,
      start: toInput(from),
      resource_properties: requirement,
      limit: 5,
    };
    const found =
      field(form, 'kind') === 'instance'
        ? await this.slotWindows(count, asked)
        : await this.hostWindows(count, asked);
    const windows = found.windows.map((w) => ({
      start: parseWire(w.start_date),
      end: parseWire(w.end_date),
      label: w.free_hosts === undefined ? found.what : `${w.free_hosts} matching hosts free`,
      reservation: found.reservation,
    }));
    this.calendar.showWindows(windows);
    if (windows.length > 0) this.calendar.focusOn(windows[0].start, windows[0].end);
    this.offer(windows, found.none);
    this.say(`${windows.length} windows found for ${found.what}`);
  }

  /** GET /v1/os-hosts/availability: `count` whole hosts. */
  private async hostWindows(count: number, asked: Record<string, string | number>) {
    const { availability } = await get<{ availability: Window[] }>('/v1/os-hosts/availability', {
      ...asked,
      count,
    });
    return {
      windows: availability,
      what: `${count} hosts`,
      none: 'No window: fewer matching hosts than asked for.',
      reservation: {
        resource_type: 'physical:host',
        min: count,
        max: count,
        hypervisor_properties: '',
        resource_properties: asked.resource_properties,
      },
    };
  }

  /** GET /v1/instances/availability: `amount` slots of the form's size. */
  private async slotWindows(amount: number, asked: Record<string, string | number>) {
    const affinity = field(this.form, 'affinity');
    const size = {
      vcpus: Number(field(this.form, 'vcpus')),
      memory_mb: Number(field(this.form, 'memory_mb')),
      disk_gb: Number(field(this.form, 'disk_gb')),
    };
    const { availability } = await get<{ availability: Window[] }>('/v1/instances/availability', {
      ...asked,
      ...size,
      amount,
      ...(affinity === '' ? {} : { affinity }),
    });
    return {
      windows: availability,
      what: `${amount} instance slot(s)`,
      none: 'No window: not enough room for these slots.',
      reservation: {
        resource_type: 'virtual:instance',
        amount,
        ...size,
        affinity: affinity === '' ? null : affinity === 'true',
        resource_properties: asked.resource_properties,
      },
    };
  }

  private offer(
    windows: { start: Date; end: Date; label: string; reservation: Record<string, unknown> }[],
    none: string,
  ): void {
    const list = document.createElement('ol');
    list.className = 'windows';
    if (windows.length === 0) {
      this.results.textContent = none;
      return;
    }
    for (const w of windows) {
      const li = document.createElement('li');
      const text = document.createElement('span');
      text.textContent = `${show(w.start)} → ${show(w.end)} (${w.label})`;
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = 'Book…';
      button.setAttribute('aria-label', `Book from ${show(w.start)} to ${show(w.end)}`);
      button.addEventListener('click', () =>
        this.ask({
          summary: `${text.textContent}`,
          start: w.start,
          end: w.end,
          reservation: w.reservation,
        }),
      );
      li.append(text, ' ', button);
      list.append(li);
    }
    this.results.append(list);
  }

  private ask(draft: Draft): void {
    this.draft = draft;
    const summary = this.confirm.querySelector<HTMLElement>('.booking-summary');
    if (summary !== null) summary.textContent = draft.summary;
    this.showError('');
    this.confirm.showModal();
  }

  private showError(text: string): void {
    const el = this.confirm.querySelector<HTMLElement>('.booking-error');
    if (el !== null) el.textContent = text;
  }

  private async book(): Promise<void> {
    const draft = this.draft;
    if (draft === null) return;
    const name = (this.confirm.querySelector('input[name=lease_name]') as HTMLInputElement).value;
    if (name.trim() === '') throw new Error('A lease needs a name');
    // "now" when the window starts at (or before) this minute: the API refuses a past start.
    const start = draft.start.getTime() <= Date.now() + 60_000 ? 'now' : toInput(draft.start);
    const { lease } = await call<{ lease: Lease }>(
      'POST',
      '/v1/leases',
      {},
      {
        name: name.trim(),
        start_date: start,
        end_date: toInput(draft.end),
        reservations: [draft.reservation],
      },
    );
    this.confirm.close();
    this.calendar.showWindows([]);
    this.say(`Lease ${lease.name} booked: ${lease.status}`);
    await this.calendar.refresh(true);
  }
}
