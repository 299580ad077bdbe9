/**
 * Lease state machine (Blazar's NEXT_STATUSES and combination table), pure.
 * Stable statuses are stored between operations; transitional ones only while an
 * operation runs. CREATING and UPDATING are Blazar's and stay in the wire's list (a
 * client may filter by them), but Climate never stores them: a create and an update are
 * each one transaction, so no reader could see the lease between its two statuses.
 */
import type { EventStatus } from './event-status.js';
import type { ReservationStatus } from './reservation-status.js';

export const LEASE_STATUSES = [
  'PENDING',
  'ACTIVE',
  'TERMINATED',
  'ERROR',
  'CREATING',
  'STARTING',
  'UPDATING',
  'TERMINATING',
  'DELETING',
] as const;
export type LeaseStatus = (typeof LEASE_STATUSES)[number];

export const STABLE_LEASE_STATUSES: readonly LeaseStatus[] = [
  'PENDING',
  'ACTIVE',
  'TERMINATED',
  'ERROR',
];

const NEXT: Record<LeaseStatus, readonly LeaseStatus[]> = {
  PENDING: ['STARTING', 'UPDATING', 'DELETING'],
  ACTIVE: ['TERMINATING', 'UPDATING', 'DELETING'],
  TERMINATED: ['UPDATING', 'DELETING'],
  ERROR: ['TERMINATING', 'UPDATING', 'DELETING'],
  CREATING: ['PENDING', 'DELETING'],
  STARTING: ['ACTIVE', 'ERROR', 'DELETING'],
  UPDATING: ['PENDING', 'ACTIVE', 'TERMINATED', 'ERROR', 'DELETING'],
  TERMINATING: ['TERMINATED', 'ERROR', 'DELETING'],
  // A crash half-way through a delete leaves DELETING; the delete may be retried.
  DELETING: ['ERROR', 'DELETING'],
};

export function isStable(status: LeaseStatus): boolean {
  return STABLE_LEASE_STATUSES.includes(status);
}

export function canTransition(from: LeaseStatus, to: LeaseStatus): boolean {
  return NEXT[from].includes(to);
}

export interface LeaseShape {
  reservations: readonly ReservationStatus[];
  startEvent: EventStatus;
  endEvent: EventStatus;
}

type Rule = {
  reservations: readonly ReservationStatus[] | 'any';
  start: readonly EventStatus[];
  end: readonly EventStatus[];
};

const NOT_RUNNING: readonly EventStatus[] = ['UNDONE', 'DONE', 'ERROR'];

/** What the reservations and events must look like for a lease to be in a status. */
const COMBINATIONS: Record<LeaseStatus, Rule> = {
  CREATING: { reservations: ['pending'], start: ['UNDONE'], end: ['UNDONE'] },
  PENDING: { reservations: ['pending'], start: ['UNDONE'], end: ['UNDONE'] },
  STARTING: {
    reservations: ['pending', 'active', 'error'],
    start: ['IN_PROGRESS'],
    end: ['UNDONE'],
  },
  ACTIVE: { reservations: ['active'], start: ['DONE'], end: ['UNDONE'] },
  TERMINATING: {
    reservations: ['active', 'deleted', 'error'],
    start: ['DONE', 'ERROR'],
    end: ['IN_PROGRESS'],
  },
  TERMINATED: { reservations: ['deleted'], start: ['DONE'], end: ['DONE'] },
  UPDATING: { reservations: 'any', start: NOT_RUNNING, end: NOT_RUNNING },
  DELETING: { reservations: 'any', start: NOT_RUNNING, end: NOT_RUNNING },
  ERROR: { reservations: ['error'], start: ['DONE', 'ERROR'], end: ['UNDONE', 'ERROR'] },
};

/** True when the lease's parts fit the combination table for `status`. */
export function fitsStatus(status: LeaseStatus, shape: LeaseShape): boolean {
  const rule = COMBINATIONS[status];
  if (!rule.start.includes(shape.startEvent) || !rule.end.includes(shape.endEvent)) return false;
  if (rule.reservations === 'any') return true;
  if (status === 'ERROR') {
    // As in Blazar: an errored lease needs at least one errored reservation, or none at all.
    return shape.reservations.length === 0 || shape.reservations.includes('error');
  }
  const allowed = rule.reservations;
  return shape.reservations.every((r) => allowed.includes(r));
}

/** The stable status a lease settles in after an operation, derived from its events. */
export function deriveStableStatus(shape: LeaseShape): LeaseStatus {
  const { startEvent: s, endEvent: e } = shape;
  let derived: LeaseStatus = 'ERROR';
  if (s === 'UNDONE' && e === 'UNDONE') derived = 'PENDING';
  else if (s === 'DONE' && e === 'UNDONE') derived = 'ACTIVE';
  else if (s === 'DONE' && e === 'DONE') derived = 'TERMINATED';
  return fitsStatus(derived, shape) ? derived : 'ERROR';
}
