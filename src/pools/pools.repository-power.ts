import type { EntityManager } from 'typeorm';
import { POOL_KINDS_SQL } from './pools.repository.js';
import { sql } from '../database/sql.js';
import { pendingBySql } from '../model/lease-tables-prepare.js';

/*
 * Part of pools.repository.ts (the SQL of aggregates and their memberships): what the
 * power plan and the provisioning lead time (power/) read of the pools.
 */

/**
 * `LEFT JOIN aggregate_hosts <ah>` on host `h`'s pool membership (freepool, shared,
 * recycle or reservation: a host has one at most), if it has one.
 */
export function poolMembershipJoin(ah: string, h: string): string {
  return `LEFT JOIN aggregate_hosts ${ah}
           ON ${ah}.host_id = ${h}.id AND ${ah}.kind IN ${POOL_KINDS_SQL}`;
}

/**
 * `LEFT JOIN`s of the pool of reservation `reservation` (SQL uuid) as `ag`, and of host
 * `hostId`'s membership of it as `ah` (NULL while the host is not in it).
 */
export function reservationPoolMemberJoin(
  ag: string,
  ah: string,
  reservation: string,
  hostId: string,
): string {
  return `LEFT JOIN aggregates ${ag} ON ${ag}.name = ${reservation}::text AND ${ag}.kind = 'reservation'
         LEFT JOIN aggregate_hosts ${ah} ON ${ah}.aggregate_id = ${ag}.id AND ${ah}.host_id = ${hostId}`;
}

/** `NOT` pending within the lead: the reservation of pool `a` does not start by now + lead. */
const notDue = (a: string) => `NOT ${pendingBySql(`${a}.name`, '$1::timestamptz + $2::interval')}`;

/**
 * Names of the reservation pools marked `key` (prepared) whose reservation is no longer
 * pending within `lead` (an SQL interval) of `now`.
 */
export async function stalePreparedPools(
  em: EntityManager,
  key: string,
  now: Date,
  lead: string,
): Promise<string[]> {
  const { rows } = await sql<{ name: string }>(
    em,
    `SELECT a.name FROM aggregates a WHERE a.kind = 'reservation' AND a.metadata ? $3
          AND ${notDue('a')}`,
    [now, lead, key],
  );
  return rows.map((r) => r.name);
}

/**
 * Locks pool `pool` if it is still marked `key` and still stale (see stalePreparedPools);
 * false otherwise (a start that opened it replaced its metadata).
 */
export async function lockStalePreparedPool(
  tx: EntityManager,
  pool: string,
  key: string,
  now: Date,
  lead: string,
): Promise<boolean> {
  const { rows } = await sql(
    tx,
    `SELECT a.id FROM aggregates a WHERE a.name = $3 AND a.metadata ? $4
            AND ${notDue('a')} FOR UPDATE OF a`,
    [now, lead, pool, key],
  );
  return rows.length > 0;
}
