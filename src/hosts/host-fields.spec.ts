import { builtinInventory, splitHostFields } from './host-fields.js';

describe('splitHostFields', () => {
  it('should read inventory fields as numbers when they come as numeric strings', () => {
    const fields = splitHostFields(
      { name: 'h1', vcpus: '8', memory_mb: 16384, local_gb: '100', gpu: 'True' },
      ['name'],
    );
    expect(fields.inventory).toEqual({ vcpus: 8, memoryMb: 16384, localGb: 100 });
    expect(fields.capabilities).toEqual({ gpu: 'True' });
  });

  it('should store capability values as strings when they come as numbers or booleans', () => {
    expect(splitHostFields({ cores: 12, ssd: true }, []).capabilities).toEqual({
      cores: '12',
      ssd: 'true',
    });
  });

  it('should read reservable as a boolean when it is given', () => {
    expect(splitHostFields({ reservable: 'false' }, []).reservable).toBe(false);
    expect(splitHostFields({ reservable: true }, []).reservable).toBe(true);
  });

  it.each([
    [{ vcpus: 'eight' }, 'Malformed parameter vcpus'],
    [{ vcpus: -1 }, 'Malformed parameter vcpus'],
    [{ ['k'.repeat(65)]: 'x' }, 'Extra capability key too long'],
    [{ 'bad key': 'x' }, 'Malformed parameter bad key'],
    [{ id: '3' }, 'id cannot be set'],
    [{ pool: 'shared' }, 'pool cannot be set'],
    [{ reservable: 'maybe' }, 'Malformed parameter reservable'],
    [{ gpu: { a: 1 } }, 'Malformed parameter gpu'],
    [{ hypervisor_type: 't'.repeat(256) }, 'Malformed parameter hypervisor_type: at most 255'],
    [{ availability_zone: 'a\ufe0f'.repeat(128) }, 'Malformed parameter availability_zone'],
    [{ service_name: 's'.repeat(256) }, 'Malformed parameter service_name: at most 255'],
    [{ ['__proto__']: 'x' }, 'Malformed parameter __proto__'],
  ])('should refuse %j', (body, message) => {
    expect(() => splitHostFields(body, [])).toThrow(message);
  });

  it('should take constructor and toString as capability names, not as fields', () => {
    expect(splitHostFields({ constructor: 'c', toString: 't' }, [])).toEqual({
      inventory: {},
      capabilities: { constructor: 'c', toString: 't' },
    });
  });

  it('should keep cpu_info whole when it is longer than the varchar fields', () => {
    expect(splitHostFields({ cpu_info: 'c'.repeat(1000) }, []).inventory.cpuInfo).toHaveLength(
      1000,
    );
  });

  it('should accept a 64-character capability key', () => {
    expect(Object.keys(splitHostFields({ ['k'.repeat(64)]: 'x' }, []).capabilities)).toHaveLength(
      1,
    );
  });
});

describe('builtinInventory', () => {
  it('should default what the request leaves out when the driver has no inventory', () => {
    expect(builtinInventory('h1', { vcpus: 4 })).toEqual({
      hypervisorHostname: 'h1',
      serviceName: 'h1',
      vcpus: 4,
      memoryMb: 0,
      localGb: 0,
      hypervisorType: 'builtin',
      hypervisorVersion: 0,
      cpuInfo: '',
      availabilityZone: 'nova',
    });
  });
});
