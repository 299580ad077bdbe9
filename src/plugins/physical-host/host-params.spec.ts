import { validateHostParams } from './host-params.js';

const valid = { min: 1, max: 1, hypervisor_properties: '', resource_properties: '' };
const levels = ['rack'];

describe('validateHostParams', () => {
  it.each([2 ** 31, 2 ** 63, 1e308, Number.MAX_SAFE_INTEGER])(
    'should refuse max %d as MalformedParameter when it is above the integer range',
    (max) => {
      expect(() => validateHostParams({ ...valid, max }, levels)).toThrow(
        expect.objectContaining({ status: 400, errorName: 'MalformedParameter' }),
      );
    },
  );

  it('should accept the largest integer', () => {
    expect(validateHostParams({ ...valid, max: 2 ** 31 - 1 }, levels).max).toBe(2 ** 31 - 1);
  });

  it.each(['["==", "$zone", "\\u0000"]', '["in", "$zone", "a", "\\ud800"]'])(
    'should refuse %s as MalformedRequirements when a value cannot be stored',
    (query) => {
      expect(() => validateHostParams({ ...valid, resource_properties: query }, levels)).toThrow(
        expect.objectContaining({ status: 400, errorName: 'MalformedRequirements' }),
      );
    },
  );

  it('should refuse an extra project longer than a project id', () => {
    expect(() =>
      validateHostParams({ ...valid, extra_projects: ['p'.repeat(256)] }, levels),
    ).toThrow('Malformed parameter extra_projects');
    expect(
      validateHostParams({ ...valid, extra_projects: ['p'.repeat(255)] }, levels).extra_projects,
    ).toHaveLength(1);
  });
});
