import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  canTransition,
  deriveStableStatus,
  fitsStatus,
  LEASE_STATUSES,
  LeaseShape,
  LeaseStatus,
} from './lease-status.js';

/**
 * Blazar's NEXT_STATUSES, read from the reference beside the project
 * (../shared/reference/blazar.md, section 3.1), so the machine is checked against Blazar's
 * table and not against a copy of its own.
 */
function blazarNextStatuses(): Map<string, string[]> {
  const reference = readFileSync(
    join(__dirname, '..', '..', '..', 'shared', 'reference', 'blazar.md'),
    'utf8',
  );
  const section = reference.slice(reference.indexOf('Allowed transitions (`NEXT_STATUSES`)'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| From |')));
  const rows = table.split('\n').filter((l) => /^\| [A-Z]+ \|/.test(l));
  return new Map(
    rows.map((l) => {
      const [from, to] = l
        .split('|')
        .slice(1, 3)
        .map((c) => c.trim());
      return [from, to.split(',').map((x) => x.trim())];
    }),
  );
}

describe('lease transitions', () => {
  const blazar = blazarNextStatuses();
  it("should know every status of Blazar's table", () => {
    expect([...blazar.keys()].sort()).toEqual([...LEASE_STATUSES].sort());
  });
  // Climate's one addition: a delete that crashed half-way (DELETING) may be retried.
  const expected = (from: LeaseStatus, to: LeaseStatus) =>
    (blazar.get(from) ?? []).includes(to) || (from === 'DELETING' && to === 'DELETING');
  const cases = LEASE_STATUSES.flatMap((from) =>
    LEASE_STATUSES.map((to) => [from, to, expected(from, to)] as const),
  );
  it.each(cases)('should answer %s -> %s with %s', (from, to, allowed) => {
    expect(canTransition(from, to)).toBe(allowed);
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
