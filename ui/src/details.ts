import { get, type Lease } from './api';
import type { Bar } from './bars';
import { parseWire, show } from './dates';

function row(list: HTMLElement, term: string, value: string): void {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  dd.textContent = value;
  list.append(dt, dd);
}

/** A floating-IP reservation's addresses, "none yet" before they are allocated. */
function addresses(r: Record<string, unknown>): string {
  const list = Array.isArray(r.floatingips) ? r.floatingips.map(String) : [];
  return list.length === 0 ? 'none yet' : list.join(', ');
}

/** The lease behind a bar, with its reservations and events (or "reserved" for another's). */
export async function showDetails(dialog: HTMLDialogElement, bar: Bar): Promise<void> {
  const body = dialog.querySelector<HTMLElement>('.dialog-body');
  const title = dialog.querySelector<HTMLElement>('h2');
  if (body === null || title === null) return;
  body.replaceChildren();
  const list = document.createElement('dl');
  body.append(list);
  if (bar.leaseId === null) {
    title.textContent = 'Reserved';
    row(list, 'Host', bar.host);
    row(list, 'From', show(bar.start));
    row(list, 'To', show(bar.end));
    row(list, 'Lease', "another project's (not shown to you)");
  } else {
    const lease = (await get<{ lease: Lease }>(`/v1/leases/${bar.leaseId}`)).lease;
    title.textContent = `Lease ${lease.name}`;
    row(list, 'Status', lease.degraded ? `${lease.status} (degraded)` : lease.status);
    row(list, bar.address === undefined ? 'Host' : 'Floating IP', bar.host);
    row(list, 'From', show(parseWire(lease.start_date)));
    row(list, 'To', show(parseWire(lease.end_date)));
    row(list, 'Project', lease.project_id);
    row(list, 'Lease id', lease.id);
    for (const r of lease.reservations) {
      const what =
        r.resource_type === 'virtual:instance'
          ? `${String(r.amount)} × ${String(r.vcpus)} vCPUs, ${String(r.memory_mb)} MB`
          : r.resource_type === 'virtual:floatingip'
            ? `${String(r.amount)} on network ${String(r.network_id)}: ${addresses(r)}`
            : `${String(r.min)}–${String(r.max)} hosts`;
      row(list, `Reservation (${r.resource_type})`, `${what}, ${r.status}`);
    }
    const events = document.createElement('table');
    events.innerHTML =
      '<caption>Events</caption><thead><tr><th scope="col">Event</th>' +
      '<th scope="col">Time</th><th scope="col">Status</th></tr></thead>';
    const tbody = document.createElement('tbody');
    for (const e of lease.events) {
      const tr = document.createElement('tr');
      for (const text of [e.event_type, show(parseWire(e.time)), e.status]) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      tbody.append(tr);
    }
    events.append(tbody);
    body.append(events);
  }
  if (!dialog.open) dialog.showModal();
}
