import { retryDelayMs } from './event-status.js';

describe('retry delays', () => {
  it.each([
    [1, 1000, 1000],
    [2, 1000, 2000],
    [4, 1000, 8000],
    [30, 1000, 300_000],
  ])('should wait attempt %i with base %i for %i ms', (attempt, base, expected) => {
    expect(retryDelayMs(attempt, base)).toBe(expected);
  });
});
