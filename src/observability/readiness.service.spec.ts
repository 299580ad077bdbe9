import type { PulseState } from './manager-pulse.js';
import { managerProblem, publicReason } from './readiness.service.js';

const STALE = 1000;

describe('managerProblem', () => {
  const fresh: PulseState = { startedAt: 0, lastPoll: { at: 10, error: null }, lastOk: 10 };

  it('should refuse a read-only database even when the polls are fine', () => {
    expect(managerProblem(fresh, { readOnly: true }, 20, STALE)).toMatch(/read-only/);
  });

  it('should judge only the database when the manager polls on no timer', () => {
    expect(managerProblem(null, { readOnly: false }, 1e9, STALE)).toBeNull();
  });
});

describe('publicReason', () => {
  it.each<[string, unknown, string]>([
    ['a timeout', Object.assign(new Error('x'), { name: 'TimeoutError' }), 'no answer in time'],
    [
      'a refused connection',
      Object.assign(new Error('at 10.1.2.3'), { code: 'ECONNREFUSED' }),
      'failed (ECONNREFUSED)',
    ],
    [
      'a fetch failure',
      new TypeError('fetch failed', { cause: { code: 'ENOTFOUND' } }),
      'failed (ENOTFOUND)',
    ],
    [
      'a service error',
      Object.assign(new Error('http://keystone/v3 said 502'), { status: 502 }),
      'failed (502)',
    ],
    ['anything else', new Error('postgres://u:secret@db/x'), 'failed'],
  ])('should say only the kind of failure for %s', (_, error, expected) => {
    expect(publicReason(error)).toBe(expected);
  });
});
