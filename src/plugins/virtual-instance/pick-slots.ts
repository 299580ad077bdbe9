/** Where a reservation's instance slots go, pure: packing, affinity, keeping what it has. */

export interface SlotHost {
  id: number;
  /** Carries other slots in the window already (packing fills these first). */
  used: boolean;
  /** Slots of the requested size that still fit at every instant of the window. */
  free: number;
}

/** Host id -> number of slots. */
export type Placement = Map<number, number>;

/**
 * `hosts` come in packing order. `current` is what the reservation holds now (for an
 * update): those hosts are preferred so that as little as possible moves.
 * Returns null when the amount does not fit.
 */
export function pickSlots(
  hosts: SlotHost[],
  amount: number,
  affinity: boolean | null,
  current: Placement = new Map(),
): Placement | null {
  const order = [...hosts].sort((a, b) => Number(current.has(b.id)) - Number(current.has(a.id)));
  if (affinity === true) {
    const host = order.find((h) => h.free >= amount);
    return host === undefined ? null : new Map([[host.id, amount]]);
  }
  const placement: Placement = new Map();
  let left = amount;
  for (const host of order) {
    if (left === 0) break;
    const take = affinity === false ? Math.min(1, host.free) : Math.min(left, host.free);
    if (take > 0) {
      placement.set(host.id, take);
      left -= take;
    }
  }
  return left === 0 ? placement : null;
}

/**
 * Where `count` slots leaving some hosts can go, keeping the reservation's affinity;
 * `kept` is what it still holds elsewhere. `true` needs one host for all its slots (and
 * nothing kept), `false` hosts it does not use yet, `null` anywhere, its own hosts first.
 */
export function pickReplacement(
  hosts: SlotHost[],
  count: number,
  affinity: boolean | null,
  kept: Placement,
): Placement | null {
  if (affinity === true) return kept.size === 0 ? pickSlots(hosts, count, true) : null;
  if (affinity === false) {
    return pickSlots(
      hosts.filter((h) => !kept.has(h.id)),
      count,
      false,
    );
  }
  return pickSlots(hosts, count, null, kept);
}
