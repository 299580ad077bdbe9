import { pollProblem, type PulseState } from './manager-pulse.js';

const STALE = 1000;

describe('pollProblem', () => {
  const started: PulseState = { startedAt: 0, lastPoll: null, lastOk: null };

  it.each<[string, PulseState, number, RegExp | null]>([
    ['no timer has started', { startedAt: null, lastPoll: null, lastOk: null }, 5, /not started/],
    ['no poll has finished yet', started, 300, /no poll has finished in the 300 ms/],
    [
      'the last poll failed',
      { startedAt: 0, lastPoll: { at: 90, error: 'connection refused' }, lastOk: 50 },
      100,
      /the last poll failed: connection refused/,
    ],
    [
      'the last poll is older than a few intervals',
      { startedAt: 0, lastPoll: { at: 100, error: null }, lastOk: 100 },
      100 + STALE + 1,
      /finished 1001 ms ago \(more than 1000 ms\)/,
    ],
    [
      'the last poll finished lately without error',
      { startedAt: 0, lastPoll: { at: 100, error: null }, lastOk: 100 },
      100 + STALE,
      null,
    ],
  ])('should judge a manager whose %s', (_, state, now, expected) => {
    const problem = pollProblem(state, now, STALE);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toMatch(expected);
  });
});
