/**
 * Blazar's floating IPs as Climate's rows (pure): the registered addresses
 * (`floatingips`), a `virtual:floatingip` reservation's parameters
 * (`floatingip_reservations`, `required_floatingips`) and its allocations
 * (`floatingip_allocations`), ids kept; and the check a create makes on them: no
 * address held by two reservations at once.
 */
import { isUuid } from '../common/ids.js';
import type { JsonObject } from '../common/json.js';
import {
  addressOf,
  networkIdOf,
  validateFloatingIpParams,
} from '../plugins/virtual-floatingip/floatingip-params.js';
import type {
  KeptAllocation,
  KeptFloatingIp,
} from '../plugins/virtual-floatingip/floatingips.repository.js';
import type { SourceData, SourceRow } from './blazar-source.js';
import { flag, utc, utcOrNull } from './plan.js';

export const FLOATINGIP = 'virtual:floatingip';

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Every registered address; a malformed one is a problem named with its id. */
export function mapFloatingIps(source: SourceData, problems: string[]): KeptFloatingIp[] {
  const out: KeptFloatingIp[] = [];
  const seen = new Set<string>();
  for (const f of source.floatingips) {
    const label = `floating IP ${f.floating_ip_address} (${f.id})`;
    try {
      if (!isUuid(f.id)) throw new Error('its id is not a uuid');
      const network = networkIdOf(f.floating_network_id, 'floating_network_id');
      const address = addressOf(f.floating_ip_address);
      const key = `${network} ${address}`;
      if (seen.has(key)) throw new Error(`registered twice on network ${network}`);
      seen.add(key);
      out.push({
        id: f.id.toLowerCase(),
        floating_network_id: network,
        subnet_id: f.subnet_id,
        floating_ip_address: address,
        reservable: flag(f.reservable),
        created_at: utc(f.created_at ?? ''),
        updated_at: utcOrNull(f.updated_at),
      });
    } catch (error) {
      problems.push(`${label}: ${message(error)}`);
    }
  }
  return out;
}

/** The source's floating-IP reservation rows, looked up by Blazar's reservation id. */
export class FloatingIpRows {
  private readonly details: Map<string | null, SourceRow>;
  private readonly required = new Map<string, string[]>();
  private readonly allocations = new Map<string, SourceRow[]>();
  private readonly addresses: Map<string, { network: string; address: string }>;

  constructor(source: SourceData) {
    this.details = new Map(source.floatingip_reservations.map((r) => [r.reservation_id, r]));
    for (const r of source.required_floatingips) {
      const key = r.floatingip_reservation_id ?? '';
      push(this.required, key, r.address ?? '');
    }
    for (const a of source.floatingip_allocations) {
      const key = a.reservation_id ?? '';
      push(this.allocations, key, a);
    }
    this.addresses = new Map(
      source.floatingips.map((f) => [
        (f.id ?? '').toLowerCase(),
        { network: f.floating_network_id ?? '', address: f.floating_ip_address ?? '' },
      ]),
    );
  }

  has(reservationId: string | null): boolean {
    return this.details.has(reservationId);
  }

  /** `network_id`, `amount`, `required_floatingips`, checked as a create checks them. */
  params(reservationId: string | null): JsonObject {
    const row = this.details.get(reservationId) as SourceRow;
    const required = this.required.get(row.id ?? '') ?? [];
    const params = validateFloatingIpParams({
      network_id: row.network_id,
      amount: row.amount,
      required_floatingips: required.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })),
    });
    const unknown = params.required_floatingips.filter(
      (a) =>
        ![...this.addresses.values()].some(
          (f) => f.network === params.network_id && f.address === a,
        ),
    );
    if (unknown.length > 0) {
      throw new Error(
        `required floating IP(s) ${unknown.join(', ')} not registered on network ${params.network_id}`,
      );
    }
    return { ...params };
  }

  /** The reservation's allocations over [start, end), each an address of its network. */
  held(
    sourceId: string | null,
    reservationId: string,
    network: string,
    start: string,
    end: string,
  ): KeptAllocation[] {
    const held = this.allocations.get(sourceId ?? '') ?? [];
    const out: KeptAllocation[] = [];
    for (const a of held) {
      const id = (a.floatingip_id ?? '').toLowerCase();
      const fip = this.addresses.get(id);
      if (fip === undefined) throw new Error(`allocated floating IP ${a.floatingip_id} not found`);
      if (fip.network !== network) {
        throw new Error(`allocated floating IP ${fip.address} is not on network ${network}`);
      }
      if (!isUuid(a.id)) throw new Error(`floating IP allocation ${a.id}: its id is not a uuid`);
      out.push({
        id: a.id.toLowerCase(),
        reservation_id: reservationId,
        floatingip_id: id,
        start,
        end,
      });
    }
    return out;
  }
}

/** An allocation as the check sees it: with its lease's name for the report. */
export type FloatingIpUse = KeptAllocation & { lease: string };

/** No address is held by two reservations over overlapping spans (the exclusion constraint). */
export function checkFloatingIpUsage(uses: FloatingIpUse[], fips: KeptFloatingIp[]): string[] {
  const names = new Map(fips.map((f) => [f.id, f.floating_ip_address]));
  const byAddress = new Map<string, FloatingIpUse[]>();
  for (const u of uses) {
    push(byAddress, u.floatingip_id, u);
  }
  const problems: string[] = [];
  for (const [id, list] of byAddress) {
    list.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    let active: FloatingIpUse[] = [];
    for (const u of list) {
      active = active.filter((a) => a.end > u.start);
      for (const a of active.filter((x) => x.reservation_id !== u.reservation_id)) {
        const until = a.end < u.end ? a.end : u.end;
        problems.push(
          `floating IP ${names.get(id) ?? id}: ${a.lease} and ${u.lease} overlap from ${u.start} to ${until}`,
        );
      }
      active.push(u);
    }
  }
  return problems;
}
