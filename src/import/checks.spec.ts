import { checkUsage, type Usage } from './checks.js';
import type { HostRow } from './plan.js';

const host = (id: number, vcpus = 8): HostRow => ({
  id,
  hypervisor_hostname: `h${id}`,
  service_name: `h${id}`,
  vcpus,
  memory_mb: 16384,
  local_gb: 100,
  hypervisor_type: 'QEMU',
  hypervisor_version: 1,
  cpu_info: '',
  availability_zone: 'nova',
  reservable: true,
  reported_down: false,
  capabilities: {},
  trust_id: null,
  created_at: '2030-01-01T00:00:00.000Z',
  updated_at: null,
});

const use = (lease: string, start: number, end: number, slots: Usage['slots'] = null): Usage => ({
  hostId: 1,
  reservationId: `r-${lease}`,
  lease: `lease ${lease}`,
  start: new Date(Date.UTC(2030, 0, start)).toISOString(),
  end: new Date(Date.UTC(2030, 0, end)).toISOString(),
  slots,
});

const ratios = { cpuAllocationRatio: 1, ramAllocationRatio: 1, diskAllocationRatio: 1 };
const slot = (vcpus: number) => ({ vcpus, memory_mb: 1024, disk_gb: 10 });

describe('checkUsage', () => {
  it.each([
    ['back to back whole hosts', [use('a', 1, 3), use('b', 3, 5)], 0],
    ['overlapping whole hosts', [use('a', 1, 4), use('b', 3, 5)], 1],
    ['a whole host over instance slots', [use('a', 1, 4, slot(2)), use('b', 3, 5)], 1],
    ['slots of two leases that fit', [use('a', 1, 4, slot(4)), use('b', 2, 5, slot(4))], 0],
    ['slots of two leases that do not fit', [use('a', 1, 4, slot(6)), use('b', 2, 5, slot(4))], 1],
    ['slots that fit one after the other', [use('a', 1, 2, slot(6)), use('b', 2, 5, slot(4))], 0],
  ])('should report the right number of problems for %s', (_, usage, problems) => {
    expect(checkUsage([host(1)], usage, ratios)).toHaveLength(problems);
  });

  it('should name the host and both leases of an overlap', () => {
    const [problem] = checkUsage([host(1)], [use('a', 1, 4), use('b', 3, 5)], ratios);
    expect(problem).toMatch(/^host h1: lease a and lease b overlap from 2030-01-03/);
  });

  it('should count the allocation ratios', () => {
    const usage = [use('a', 1, 4, slot(6)), use('b', 2, 5, slot(4))];
    expect(checkUsage([host(1)], usage, { ...ratios, cpuAllocationRatio: 2 })).toEqual([]);
  });
});
