import { chainsByLease, MAX_RETRY_MS, retryDelayMs } from './webhook-schedule.js';

describe('webhook schedule', () => {
  it('should keep each lease in outbox order when splitting a batch into chains', () => {
    const rows = [
      { n: 1, payload: { id: 'a' } },
      { n: 2, payload: { id: 'b' } },
      { n: 3, payload: { id: 'a' } },
      { n: 4, payload: { id: 'c' } },
      { n: 5, payload: { id: 'b' } },
      { n: 6, payload: { id: 'a' } },
    ];
    expect(chainsByLease(rows).map((chain) => chain.map((r) => r.n))).toEqual([
      [1, 3, 6],
      [2, 5],
      [4],
    ]);
  });

  it('should give a payload without a lease id a chain of its own', () => {
    const rows = [{ payload: {} }, { payload: {} }];
    expect(chainsByLease(rows)).toHaveLength(2);
  });

  it.each([
    [0, 0],
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [6, 32_000],
    [7, MAX_RETRY_MS],
    [1000, MAX_RETRY_MS],
  ])('should wait %i failures -> %i ms before retrying', (failures, ms) => {
    expect(retryDelayMs(failures)).toBe(ms);
  });
});
