import type { EntityManager } from 'typeorm';
import { sql } from '../../database/sql.js';
import { hostReservationsStartingSql } from '../../model/lease-tables-prepare.js';
import { hostJoin } from '../../pools/hosts.repository.js';
import { reservationPoolMemberJoin } from '../../pools/pools.repository-power.js';

/** A host reservation to prepare: its lease's projects, its hosts, whether all are on. */
export interface ToPrepare {
  id: string;
  project_id: string;
  extra: string[];
  hosts: string[];
  all_on: boolean;
}

/**
 * A host's power record, from its owner (power/, a floor above): `join` it as `hp` on a
 * host id, `on` says it is on.
 */
export interface PowerRecordSql {
  join: (hp: string, hostId: string) => string;
  on: (hp: string) => string;
}

/**
 * Up to `limit` host reservations of pending leases starting after `now` and within
 * `lead` (an SQL interval), soonest first, whose hosts are not all in their pool yet: the
 * ones the provisioning lead time (power/provisioning.ts) prepares.
 */
export async function reservationsToPrepare(
  em: EntityManager,
  now: Date,
  lead: string,
  limit: number,
  power: PowerRecordSql,
): Promise<ToPrepare[]> {
  const { rows } = await sql<ToPrepare>(
    em,
    `WITH due AS (
         ${hostReservationsStartingSql('$1', '$1::timestamptz + $2::interval')})
       SELECT d.id, d.project_id, d.extra,
              array_agg(h.hypervisor_hostname ORDER BY h.id) AS hosts,
              bool_and(${power.on('hp')}) AS all_on
         FROM due d JOIN host_allocations a ON a.reservation_id = d.id
         ${hostJoin('h', 'a.host_id')}
         ${power.join('hp', 'a.host_id')}
         ${reservationPoolMemberJoin('ag', 'ah', 'd.id', 'a.host_id')}
        GROUP BY d.id, d.project_id, d.extra, d.start_at
       HAVING bool_or(ah.host_id IS NULL)
        ORDER BY d.start_at LIMIT ${limit}`,
    [now, lead],
  );
  return rows;
}
