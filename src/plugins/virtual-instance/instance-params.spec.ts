import { validateInstanceParams } from './instance-params.js';

const valid = {
  vcpus: 1,
  memory_mb: 512,
  disk_gb: 0,
  amount: 1,
  affinity: null,
  resource_properties: '',
};

describe('validateInstanceParams', () => {
  it('should refuse a resource_id longer than a server id', () => {
    expect(() => validateInstanceParams({ ...valid, resource_id: 's'.repeat(256) })).toThrow(
      'Malformed parameter resource_id',
    );
  });

  it('should refuse a requirement value with a NUL as MalformedRequirements', () => {
    expect(() =>
      validateInstanceParams({ ...valid, resource_properties: '["==", "$a", "\\u0000"]' }),
    ).toThrow(expect.objectContaining({ errorName: 'MalformedRequirements' }));
  });

  it.each([2 ** 31, 2 ** 63, 1e308])('should refuse amount %d', (amount) => {
    expect(() => validateInstanceParams({ ...valid, amount })).toThrow(
      'Malformed parameter amount',
    );
  });
});
