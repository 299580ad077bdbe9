import type TestAgent from 'supertest/lib/agent.js';

/** Registers hosts through the API; `extra` becomes inventory fields and capabilities. */
export async function addHosts(
  http: TestAgent,
  names: string[],
  extra: (name: string, index: number) => Record<string, unknown> = () => ({}),
): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, name] of names.entries()) {
    const res = await http
      .post('/v1/os-hosts')
      .send({ name, vcpus: 8, memory_mb: 16384, local_gb: 100, ...extra(name, i) });
    if (res.status !== 201)
      throw new Error(`host ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push((res.body as { host: { id: string } }).host.id);
  }
  return ids;
}

export function hostReservation(values: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    resource_type: 'physical:host',
    min: 1,
    max: 1,
    hypervisor_properties: '',
    resource_properties: '',
    ...values,
  };
}

/** Slots of 4 vCPU / 4 GB / 10 GB on hosts whose `zone` capability is `zone`. */
export function slotReservation(
  zone: string,
  values: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    resource_type: 'virtual:instance',
    vcpus: 4,
    memory_mb: 4096,
    disk_gb: 10,
    amount: 1,
    affinity: null,
    resource_properties: `["==", "$zone", "${zone}"]`,
    ...values,
  };
}

/** A lease's health: `degraded`, and its first reservation's flags (as an admin sees them). */
export async function healthFlags(
  http: TestAgent,
  leaseId: string,
): Promise<{ degraded: boolean; missing: boolean; changed: boolean }> {
  const lease = (await http.get(`/v1/leases/${leaseId}`).expect(200)).body.lease;
  return {
    degraded: lease.degraded,
    missing: lease.reservations[0].missing_resources,
    changed: lease.reservations[0].resources_changed,
  };
}

export function names(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i + 1).padStart(3, '0')}`);
}
