import type { DataItem } from 'vis-timeline/standalone';
import { ApiError, get, type Lease } from './api';
import { statusOf, type Bar } from './bars';
import { parseWire } from './dates';

/** Blazar's floating IP object (`GET /v1/floatingips`). */
export interface FloatingIp {
  id: string;
  floating_network_id: string;
  floating_ip_address: string;
  reservable: boolean;
}

/** An address a lease's `virtual:floatingip` reservation holds, on its row. */
export interface HeldAddress {
  row: string;
  address: string;
  lease: Lease;
  reservationId: string;
  start: string;
  end: string;
}

export const FLOATINGIP = 'virtual:floatingip';

/** The row of an address: one per registered address of a network. */
export const rowOf = (network: string, address: string) => `fip:${network}:${address}`;

export const labelOf = (network: string) => `floating IPs · network ${network}`;

/**
 * The registered addresses, or null when the API does not list them to this caller (403 by
 * policy, 404 where the type is not enabled): then only its own leases' addresses are rows.
 */
export async function listFloatingIps(): Promise<FloatingIp[] | null> {
  try {
    return (await get<{ floatingips: FloatingIp[] }>('/v1/floatingips')).floatingips;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 403 || error.status === 404)) return null;
    throw error;
  }
}

/** The addresses the leases' floating-IP reservations hold (the lease list shows them). */
export function heldAddresses(leases: Lease[]): HeldAddress[] {
  const held: HeldAddress[] = [];
  for (const lease of leases) {
    for (const r of lease.reservations) {
      if (r.resource_type !== FLOATINGIP || typeof r.network_id !== 'string') continue;
      const addresses = Array.isArray(r.floatingips) ? (r.floatingips as unknown[]) : [];
      for (const address of addresses) {
        if (typeof address !== 'string') continue;
        held.push({
          row: rowOf(r.network_id, address),
          address,
          lease,
          reservationId: r.id,
          start: typeof r.start_date === 'string' ? r.start_date : lease.start_date,
          end: typeof r.end_date === 'string' ? r.end_date : lease.end_date,
        });
      }
    }
  }
  return held;
}

/**
 * The floating-IP rows by id (name and group label): every registered address when the API
 * lists them, else the addresses held by the leases this caller sees.
 */
export function floatingIpRows(
  registered: FloatingIp[] | null,
  held: HeldAddress[],
): Map<string, { name: string; label: string }> {
  const rows = new Map<string, { name: string; label: string }>();
  const sorted = [...(registered ?? [])].sort((a, b) =>
    a.floating_ip_address.localeCompare(b.floating_ip_address, 'en', { numeric: true }),
  );
  for (const f of sorted) {
    rows.set(rowOf(f.floating_network_id, f.floating_ip_address), {
      name: f.floating_ip_address,
      label: labelOf(f.floating_network_id),
    });
  }
  const byAddress = (a: HeldAddress, b: HeldAddress) =>
    a.address.localeCompare(b.address, 'en', { numeric: true });
  for (const h of [...held].sort(byAddress)) {
    if (rows.has(h.row)) continue;
    // An address deregistered since (or not listed to this caller): its lease still shows it.
    const network = h.row.slice('fip:'.length, h.row.length - h.address.length - 1);
    rows.set(h.row, { name: h.address, label: labelOf(network) });
  }
  return rows;
}

/**
 * Rows of floating IPs (every registered one when the API lists them) and bars for the
 * addresses the leases in the window hold, added to the calendar's; answers how many
 * address rows.
 */
export function floatingIpBars(
  registered: FloatingIp[] | null,
  leases: Lease[],
  rows: Map<string, { name: string; label: string }>,
  items: (DataItem & { bar: Bar })[],
  now: number,
): number {
  const held = heldAddresses(leases);
  const fipRows = floatingIpRows(registered, held);
  for (const [id, row] of fipRows) rows.set(id, row);
  for (const h of held) {
    const start = parseWire(h.start);
    const end = parseWire(h.end);
    const status = statusOf(h.lease, end, now);
    const bar: Bar = {
      lease: h.lease,
      leaseId: h.lease.id,
      host: h.address,
      address: h.address,
      start,
      end,
      status,
    };
    items.push({
      id: `${h.reservationId}@${h.row}`,
      group: h.row,
      start,
      end,
      content: '',
      className: `bar-${status}`,
      bar,
    });
  }
  return fipRows.size;
}
