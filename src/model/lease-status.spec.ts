import {
  canTransition,
  deriveStableStatus,
  fitsStatus,
  LEASE_STATUSES,
  LeaseShape,
  LeaseStatus,
} from './lease-status.js';

const allowed: Record<LeaseStatus, LeaseStatus[]> = {
  PENDING: ['STARTING', 'UPDATING', 'DELETING'],
  ACTIVE: ['TERMINATING', 'UPDATING', 'DELETING'],
  TERMINATED: ['UPDATING', 'DELETING'],
  ERROR: ['TERMINATING', 'UPDATING', 'DELETING'],
  CREATING: ['PENDING', 'DELETING'],
  STARTING: ['ACTIVE', 'ERROR', 'DELETING'],
  UPDATING: ['PENDING', 'ACTIVE', 'TERMINATED', 'ERROR', 'DELETING'],
  TERMINATING: ['TERMINATED', 'ERROR', 'DELETING'],
  DELETING: ['ERROR', 'DELETING'],
};

describe('lease transitions', () => {
  const cases = LEASE_STATUSES.flatMap((from) =>
    LEASE_STATUSES.map((to) => [from, to, allowed[from].includes(to)] as const),
  );
  it.each(cases)('should answer %s -> %s with %s', (from, to, expected) => {
    expect(canTransition(from, to)).toBe(expected);
  });
});

const shape = (
  startEvent: LeaseShape['startEvent'],
  endEvent: LeaseShape['endEvent'],
  reservations: LeaseShape['reservations'] = [],
): LeaseShape => ({ startEvent, endEvent, reservations });

describe('deriveStableStatus', () => {
  it.each([
    [shape('UNDONE', 'UNDONE'), 'PENDING'],
    [shape('UNDONE', 'UNDONE', ['pending', 'pending']), 'PENDING'],
    [shape('DONE', 'UNDONE'), 'ACTIVE'],
    [shape('DONE', 'UNDONE', ['active']), 'ACTIVE'],
    [shape('DONE', 'DONE'), 'TERMINATED'],
    [shape('DONE', 'DONE', ['deleted']), 'TERMINATED'],
    // events say ACTIVE but a reservation failed to start
    [shape('DONE', 'UNDONE', ['active', 'error']), 'ERROR'],
    // events say TERMINATED but a reservation was never released
    [shape('DONE', 'DONE', ['active']), 'ERROR'],
    [shape('ERROR', 'UNDONE', ['error']), 'ERROR'],
    [shape('ERROR', 'DONE', ['deleted']), 'ERROR'],
    [shape('UNDONE', 'DONE'), 'ERROR'],
    [shape('IN_PROGRESS', 'UNDONE'), 'ERROR'],
  ] as const)('should derive %j as %s', (s, expected) => {
    expect(deriveStableStatus(s)).toBe(expected);
  });
});

describe('fitsStatus', () => {
  it.each([
    ['STARTING', shape('IN_PROGRESS', 'UNDONE', ['pending']), true],
    ['STARTING', shape('UNDONE', 'UNDONE', ['pending']), false],
    ['TERMINATING', shape('DONE', 'IN_PROGRESS', ['active']), true],
    ['TERMINATING', shape('DONE', 'UNDONE', ['active']), false],
    ['DELETING', shape('DONE', 'UNDONE', ['active']), true],
    ['DELETING', shape('IN_PROGRESS', 'UNDONE', ['pending']), false],
    ['DELETING', shape('DONE', 'IN_PROGRESS', ['active']), false],
    ['UPDATING', shape('DONE', 'DONE', ['deleted']), true],
    ['ERROR', shape('DONE', 'UNDONE', ['active']), false],
    ['ERROR', shape('DONE', 'UNDONE', ['active', 'error']), true],
  ] as const)('should answer %s for %j with %s', (status, s, expected) => {
    expect(fitsStatus(status, s)).toBe(expected);
  });
});
