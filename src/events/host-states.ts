import type { EntityManager } from 'typeorm';
import { setReportedStates, type HostKey } from '../pools/hosts.repository.js';

/**
 * Hosts reported down become unreservable (healing then moves their reservations); when
 * reported up again they become reservable. A host an admin took out of service stays
 * out: only a host taken out by a report (`reported_down`) is put back by one, and an
 * admin's change of `reservable` clears the mark. Returns how many hosts changed.
 */
export async function followHostStates(
  db: EntityManager,
  key: HostKey,
  down: string[],
  up: string[],
  now: Date,
): Promise<number> {
  if (down.length === 0 && up.length === 0) return 0;
  return setReportedStates(db, key, down, up, now);
}
