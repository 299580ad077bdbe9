import { isUuid, newId } from './ids.js';

/** The 48-bit millisecond time at the front of a version 7 uuid. */
function timeOf(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}

describe('newId', () => {
  it('should make a version 7 uuid with the RFC 9562 variant', () => {
    for (let i = 0; i < 1000; i++) {
      const id = newId();
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7');
      expect('89ab').toContain(id[19]);
    }
  });

  it('should carry the time it was made in its first 48 bits', () => {
    const before = Date.now();
    const id = newId();
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(Date.now());
    expect(timeOf(newId(Date.UTC(2040, 0, 1)))).toBe(Date.UTC(2040, 0, 1));
  });

  it('should sort an id made in a later millisecond after an earlier one, as text and as bytes', () => {
    const ids = [0, 1, 255, 256, 65_536, Date.now()].map((t) => newId(t));
    expect([...ids].sort()).toEqual(ids);
  });

  it('should not repeat within one millisecond', () => {
    const now = Date.now();
    const ids = new Set(Array.from({ length: 10_000 }, () => newId(now)));
    expect(ids.size).toBe(10_000);
  });
});
