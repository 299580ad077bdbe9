import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';

/** How a report names a host: the driver by hypervisor, Nova's notifications by service host. */
export type HostKey = 'hypervisor_hostname' | 'service_name';

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
  const { affected } = await sql(
    db,
    `UPDATE hosts SET reservable = (${key} = ANY($2::text[])),
                      reported_down = (${key} = ANY($1::text[])), updated_at = $3
      WHERE (${key} = ANY($1::text[]) AND reservable AND NOT reported_down)
         OR (${key} = ANY($2::text[]) AND reported_down)`,
    [down, up, now],
  );
  return affected;
}
