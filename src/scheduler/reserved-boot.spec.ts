import { parseLeaseParams } from './reserved-boot.js';

describe('parseLeaseParams', () => {
  it('should refuse a NUL escaped inside the JSON text', () => {
    expect(() =>
      parseLeaseParams('{"name": "a\\u0000", "start": "now", "end": "2040-01-02 00:00"}'),
    ).toThrow('Malformed lease_params: name contains a NUL character');
  });

  it('should refuse a lease name longer than the name column', () => {
    expect(() =>
      parseLeaseParams({ name: 'n'.repeat(256), start: 'now', end: '2040-01-02 00:00' }),
    ).toThrow('Malformed parameter lease_params name: at most 255 characters');
  });

  it('should read the parameters when they are well formed', () => {
    expect(parseLeaseParams('{"name": "b", "start": "now", "end": "2040-01-02 00:00"}')).toEqual({
      name: 'b',
      start: 'now',
      end: '2040-01-02 00:00',
    });
  });
});
