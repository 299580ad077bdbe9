import { BuiltinDriver } from '../../compute/builtin.driver.js';
import type { SourceFlavor } from '../../compute/compute-driver.js';
import {
  hostsRequirement,
  MAX_TRAIT_HOSTS,
  sizeFlavor,
  validateFlavorRequest,
} from './flavor-params.js';

const flavor = (size: Partial<SourceFlavor>): SourceFlavor => ({
  id: 'f',
  name: 'f',
  vcpus: 2,
  ramMb: 1024,
  diskGb: 10,
  ephemeralGb: 0,
  swapMb: 0,
  extraSpecs: {},
  shown: {},
  ...size,
});

describe('sizeFlavor', () => {
  it('should count what Nova asks of Placement for a server of the flavor', () => {
    expect(sizeFlavor(flavor({ ephemeralGb: 4, swapMb: 1 }), 4)).toEqual({
      vcpus: 2,
      memory_mb: 1024,
      disk_gb: 15,
      required: [],
      forbidden: [],
    });
  });

  it('should count dedicated CPUs as whole cores, and let resources:* override', () => {
    expect(sizeFlavor(flavor({ extraSpecs: { 'hw:cpu_policy': 'dedicated' } }), 4).vcpus).toBe(8);
    expect(sizeFlavor(flavor({ extraSpecs: { 'hw:cpu_policy': 'shared' } }), 4).vcpus).toBe(2);
    const overridden = sizeFlavor(
      flavor({
        extraSpecs: {
          'resources:VCPU': '1',
          'resources:PCPU': '1',
          'resources:MEMORY_MB': '64',
          'resources:DISK_GB': '0',
          'resources:CUSTOM_GPU': '1',
        },
      }),
      3,
    );
    expect(overridden).toMatchObject({ vcpus: 4, memory_mb: 64, disk_gb: 0 });
  });

  it('should read traits and refuse what Blazar refuses', () => {
    const traits = sizeFlavor(
      flavor({ extraSpecs: { 'trait:A': 'required', 'trait:B': 'forbidden' } }),
      1,
    );
    expect([traits.required, traits.forbidden]).toEqual([['A'], ['B']]);
    expect(() => sizeFlavor(flavor({ extraSpecs: { 'trait:A': 'yes' } }), 1)).toThrow(
      'Invalid value for trait A',
    );
    expect(() => sizeFlavor(flavor({ extraSpecs: { 'resources:VCPU': 'x' } }), 1)).toThrow(
      /Invalid value for resources:VCPU/,
    );
    expect(() => sizeFlavor(flavor({ extraSpecs: { 'resources:VCPU': '0' } }), 1)).toThrow(
      /physical:host/,
    );
    const reservationFlavor = { 'aggregate_instance_extra_specs:reservation': 'r' };
    expect(() => sizeFlavor(flavor({ extraSpecs: reservationFlavor }), 1)).toThrow(
      "Flavor f is a reservation's own flavor",
    );
  });
});

describe('validateFlavorRequest', () => {
  it('should take the blazar CLI numbers and strings, and refuse the rest', () => {
    expect(validateFlavorRequest({ flavor_id: 3, amount: '2' })).toEqual({
      flavorId: '3',
      amount: 2,
      affinity: null,
    });
    expect(() => validateFlavorRequest({ amount: 1 })).toThrow('Missing parameter flavor_id');
    expect(() => validateFlavorRequest({ flavor_id: 'f', amount: 1.5 })).toThrow(
      'Malformed parameter amount',
    );
    expect(() => validateFlavorRequest({ flavor_id: '', amount: 1 })).toThrow(
      'Malformed parameter flavor_id',
    );
  });
});

describe('hostsRequirement', () => {
  it('should name the hosts a trait allows, up to its limit', () => {
    expect(hostsRequirement(null)).toBe('');
    expect(JSON.parse(hostsRequirement(['a', 'b']))).toEqual([
      'in',
      '$hypervisor_hostname',
      'a',
      'b',
    ]);
    const many = Array.from({ length: MAX_TRAIT_HOSTS + 1 }, (_, i) => `h${i}`);
    expect(() => hostsRequirement(many)).toThrow(/at most 250/);
  });
});

describe('the builtin driver', () => {
  it('should refuse a flavor with what the operator must change', async () => {
    await expect(new BuiltinDriver().getFlavor('3')).rejects.toThrow(/COMPUTE_DRIVER=nova/);
  });
});
