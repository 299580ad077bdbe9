/**
 * The checks a create makes, over the whole import at once (pure): no two whole-host
 * allocations on one host overlap, no host is reserved whole while it carries instance
 * slots, and the slots on a host fit its size times the allocation ratios.
 */
import type { HostRow } from './plan.js';

/** What holds a host over [start, end): an imported allocation or one already in Climate. */
export interface Usage {
  hostId: number;
  reservationId: string;
  lease: string;
  start: string;
  end: string;
  /** Null for a whole host; else the slots' total size. */
  slots: { vcpus: number; memory_mb: number; disk_gb: number } | null;
}

export interface Ratios {
  cpuAllocationRatio: number;
  ramAllocationRatio: number;
  diskAllocationRatio: number;
}

export function checkUsage(hosts: HostRow[], usage: Usage[], ratios: Ratios): string[] {
  const byId = new Map(hosts.map((h) => [h.id, h]));
  const perHost = new Map<number, Usage[]>();
  for (const u of usage) {
    const list = perHost.get(u.hostId);
    if (list === undefined) perHost.set(u.hostId, [u]);
    else list.push(u);
  }
  const problems: string[] = [];
  for (const [hostId, list] of perHost) {
    const host = byId.get(hostId);
    const name = host?.hypervisor_hostname ?? `id ${hostId}`;
    list.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    let active: Usage[] = [];
    let overfull = false;
    for (const u of list) {
      active = active.filter((a) => a.end > u.start);
      for (const a of active) {
        if ((a.slots === null || u.slots === null) && a.reservationId !== u.reservationId) {
          const until = a.end < u.end ? a.end : u.end;
          problems.push(
            `host ${name}: ${a.lease} and ${u.lease} overlap from ${u.start} to ${until}` +
              (a.slots === null && u.slots === null
                ? ''
                : ' (a host with instance slots cannot be reserved whole)'),
          );
        }
      }
      active.push(u);
      if (u.slots !== null && host !== undefined && !overfull) {
        const slots = active.filter((a) => a.slots !== null);
        const sum = (k: 'vcpus' | 'memory_mb' | 'disk_gb') =>
          slots.reduce((n, a) => n + (a.slots?.[k] ?? 0), 0);
        const over =
          sum('vcpus') > host.vcpus * ratios.cpuAllocationRatio ||
          sum('memory_mb') > host.memory_mb * ratios.ramAllocationRatio ||
          sum('disk_gb') > host.local_gb * ratios.diskAllocationRatio;
        if (over) {
          overfull = true;
          problems.push(
            `host ${name}: the instance slots of ${[...new Set(slots.map((a) => a.lease))].join(', ')} ` +
              `need ${sum('vcpus')} vCPUs, ${sum('memory_mb')} MB and ${sum('disk_gb')} GB at ${u.start}, ` +
              'more than the host holds with the configured allocation ratios',
          );
        }
      }
    }
  }
  return problems;
}
