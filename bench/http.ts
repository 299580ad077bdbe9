/** A request that takes longer than this is a hung bench, not a figure. */
export const REQUEST_TIMEOUT_MS = 60_000;

const DAY = 86_400_000;

/** Plain HTTP calls to the app under test, on loopback. */
export class BenchClient {
  constructor(readonly base: string) {}

  /** POSTs `body`; throws unless the status is one of `expect` (any if empty). Returns it. */
  async post(path: string, body: unknown, expect: number[]): Promise<number> {
    const res = await fetch(this.base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (expect.length > 0 && !expect.includes(res.status))
      throw new Error(`${path}: ${res.status} ${text}`);
    return res.status;
  }

  async get(path: string): Promise<void> {
    const res = await fetch(this.base + path, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
  }
}

export const fmt = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');

/** A six-hour lease of `count` hosts on a day of the year chosen by `i`. */
export function hostLease(start: Date, i: number, count: number, properties = '') {
  const s = new Date(start.getTime() + ((i * 7919) % 360) * DAY + 3600_000);
  return {
    name: `bench-${count}-${i}`,
    start_date: fmt(s),
    end_date: fmt(new Date(s.getTime() + 6 * 3600_000)),
    reservations: [
      {
        resource_type: 'physical:host',
        min: count,
        max: count,
        hypervisor_properties: '',
        resource_properties: properties,
      },
    ],
  };
}

/** The same window with `amount` instance slots of 2 vCPU / 4 GB / 20 GB. */
export function instanceLease(start: Date, i: number, amount: number) {
  return {
    ...hostLease(start, i, 1),
    reservations: [
      {
        resource_type: 'virtual:instance',
        vcpus: 2,
        memory_mb: 4096,
        disk_gb: 20,
        amount,
        affinity: null,
        resource_properties: '',
      },
    ],
  };
}
