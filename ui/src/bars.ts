import type { Lease } from './api';
import { HOUR } from './dates';

/** An allocation shown less than this before its end is "ending soon". */
const ENDING_SOON = 24 * HOUR;

/** A bar of the calendar: a lease's hold on a host (or its slots) or on a floating IP. */
export interface Bar {
  lease: Lease | null;
  leaseId: string | null;
  host: string;
  start: Date;
  end: Date;
  slots?: number;
  /** A floating-IP bar's address (its row); host bars have none. */
  address?: string;
  status: string;
}

/** The status class a bar is drawn with (the legend names the same ones). */
export function statusOf(lease: Lease | null, end: Date, now: number): string {
  if (lease === null) return 'reserved';
  if (lease.degraded) return 'degraded';
  if (lease.status === 'ACTIVE') return end.getTime() - now < ENDING_SOON ? 'ending' : 'active';
  if (['PENDING', 'CREATING', 'STARTING', 'UPDATING'].includes(lease.status)) return 'pending';
  if (lease.status === 'ERROR') return 'error';
  return 'ended';
}

export const LABEL: Record<string, string> = {
  reserved: 'reserved (another project)',
  degraded: 'degraded',
  ending: 'ending soon',
  active: 'active',
  pending: 'pending',
  error: 'error',
  ended: 'ended',
};
