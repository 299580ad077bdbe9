import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { POOL_KINDS_SQL } from '../pools/pools.repository.js';
import { sql } from '../database/sql.js';
import { notHeldAt } from '../pools/host-usage.js';

/** What a pool's hosts get: passing, or which refusal (worded by the filter). */
export type Verdict = 'pass' | 'pooled' | 'elsewhere' | 'foreign';

/** Hosts that share a pool share a verdict, so the explained queries answer a row per pool. */
export interface PoolGroup {
  /** The pool, or null for the hosts in none (and names Climate does not know). */
  pool: string | null;
  verdict: Verdict;
  names: string[];
}

/**
 * The verdict of the pool `p` (null: in no pool) for project $1 and hint $2 (text[], empty
 * without a hint). Without a hint no host of the reservation pool passes; with one, only
 * the hosts of those reservations, for their project or an extra project (metadata
 * `<project>` true, as Blazar writes it).
 */
const VERDICT = `CASE
    WHEN cardinality($2::text[]) = 0 THEN
      CASE WHEN p.kind IS NULL OR p.kind = 'shared' THEN 'pass' ELSE 'pooled' END
    WHEN p.kind IS DISTINCT FROM 'reservation' OR NOT p.name = ANY($2::text[]) THEN 'elsewhere'
    WHEN p.metadata -> 'blazar:owner' = to_jsonb($1::text)
      OR p.metadata -> $1::text = 'true'::jsonb
      OR (jsonb_typeof(p.metadata -> $1::text) = 'string'
          AND p.metadata ->> $1::text ~* '^(true|1|yes)$') THEN 'pass'
    ELSE 'foreign' END`;

/**
 * Named hosts are looked up one index probe each while they are at most a quarter of the
 * fleet (or this many, before the fleet is counted): left to itself the planner hashes
 * the whole hosts table for a few hundred names (it costs each probe as a disk read).
 * Past that a hash join is cheaper, and the planner picks it.
 */
export const PROBED_NAMES = 1000;

/** How often the fleet's size (the planner's count of hosts) is read again. */
const FLEET_SIZE_TTL_MS = 60_000;

/**
 * The pool `p` of each name `u.n` (null: in none, or no such host). `probe`: one index
 * probe per name (LIMIT 1 keeps the planner from turning it into a join).
 */
function poolOfName(probe: boolean): string {
  return probe
    ? `LEFT JOIN LATERAL (
         SELECT p.* FROM hosts h
           JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS_SQL}
           JOIN aggregates p ON p.id = ah.aggregate_id
          WHERE h.hypervisor_hostname = u.n
          LIMIT 1) p ON true`
    : `LEFT JOIN hosts h ON h.hypervisor_hostname = u.n
       LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS_SQL}
       LEFT JOIN aggregates p ON p.id = ah.aggregate_id`;
}

/** The named hosts ($3) that pass, in the order named, repeats kept. */
export function namedPassingSql(probe: boolean): string {
  return `
  SELECT array_agg(u.n ORDER BY u.i) AS names
    FROM unnest($3::text[]) WITH ORDINALITY u(n, i)
    ${poolOfName(probe)}
   WHERE (${VERDICT}) = 'pass'`;
}

/** The named hosts ($3) with their verdicts, a row per pool (and one for no pool). */
export function namedGroupsSql(probe: boolean): string {
  return `
  SELECT p.name AS pool, ${VERDICT} AS verdict, array_agg(u.n) AS names
    FROM unnest($3::text[]) u(n)
    ${poolOfName(probe)}
   GROUP BY 1, 2`;
}

const NAMED = {
  passing: { probed: namedPassingSql(true), joined: namedPassingSql(false) },
  groups: { probed: namedGroupsSql(true), joined: namedGroupsSql(false) },
};

/** The passing members of the hinted pools, by host id: the planner starts from the pools. */
export const HINTED_SQL = `
  SELECT array_agg(h.hypervisor_hostname ORDER BY h.id) AS names
    FROM aggregates p
    JOIN aggregate_hosts ah ON ah.aggregate_id = p.id
    JOIN hosts h ON h.id = ah.host_id
   WHERE p.kind = 'reservation' AND p.name = ANY($2::text[]) AND (${VERDICT}) = 'pass'`;

/**
 * Without a hint, the shared pool's members and the hosts in no pool, by host id. Every
 * host has a pool unless a pool was dropped under it, and the two counts (index-only
 * scans, no hash) say so; only then are the hosts in none looked for.
 */
export const UNHINTED_SQL = `
  SELECT CASE
    WHEN (SELECT count(*) FROM hosts)
         = (SELECT count(*) FROM aggregate_hosts WHERE kind IN ${POOL_KINDS_SQL})
    THEN (SELECT array_agg(h.hypervisor_hostname ORDER BY h.id)
            FROM aggregate_hosts ah JOIN hosts h ON h.id = ah.host_id
           WHERE ah.kind = 'shared')
    ELSE (SELECT array_agg(h.hypervisor_hostname ORDER BY h.id)
            FROM hosts h
            LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS_SQL}
           WHERE ah.kind IS NULL OR ah.kind = 'shared')
    END AS names`;

/** Every host with its verdict: the passing ones as one group (pool null), by id. */
export const GROUPED_SQL = `
  SELECT CASE WHEN v.verdict = 'pass' THEN NULL ELSE v.pool END AS pool, v.verdict,
         array_agg(v.name ORDER BY v.id) AS names
    FROM (SELECT h.id, h.hypervisor_hostname AS name, p.name AS pool, ${VERDICT} AS verdict
            FROM hosts h
            LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS_SQL}
            LEFT JOIN aggregates p ON p.id = ah.aggregate_id) v
   GROUP BY 1, 2`;

/**
 * Of the named hosts ($1; null: every host), in the order named, those of the free pool
 * that no lease holds at $2: no allocation over that instant and in no reservation's or
 * instance reservation's aggregate. Where a boot reserved for later may wait for its start.
 */
export const FREE_NOW_SQL = `
  WITH asked AS (
    SELECT n AS name, i FROM unnest($1::text[]) WITH ORDINALITY u(n, i) WHERE $1::text[] IS NOT NULL
    UNION ALL SELECT hypervisor_hostname, id FROM hosts WHERE $1::text[] IS NULL)
  SELECT array_agg(s.name ORDER BY s.i) AS names
    FROM asked s
    JOIN hosts h ON h.hypervisor_hostname = s.name
    JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind = 'freepool'
   WHERE h.reservable
     AND ${notHeldAt('h', '$2::timestamptz')}
     AND NOT EXISTS (SELECT 1 FROM aggregate_hosts x JOIN aggregates g ON g.id = x.aggregate_id
                      WHERE x.host_id = h.id AND g.kind IN ('reservation', 'instance'))`;

/**
 * The filter's reads. Each costs what its request names: a probe per named host, the
 * hinted pools' members, or (asked about every host) the whole fleet's pools.
 */
@Injectable()
export class PoolVerdictsRepository {
  private fleet = { hosts: 0, readAt: -Infinity };

  /** The named hosts that pass, in the order named (repeats kept). */
  async namedPassing(
    em: EntityManager,
    names: string[],
    project: string,
    wanted: string[],
  ): Promise<string[]> {
    const text = (await this.probe(em, names)) ? NAMED.passing.probed : NAMED.passing.joined;
    const { rows } = await sql<{ names: string[] | null }>(em, text, [project, wanted, names]);
    return rows[0]?.names ?? [];
  }

  /** Every named host's verdict, a group per pool (pool null: in none, or unknown). */
  async namedGroups(
    em: EntityManager,
    names: string[],
    project: string,
    wanted: string[],
  ): Promise<PoolGroup[]> {
    const text = (await this.probe(em, names)) ? NAMED.groups.probed : NAMED.groups.joined;
    const { rows } = await sql<PoolGroup>(em, text, [project, wanted, names]);
    return rows;
  }

  /**
   * Every registered host that passes, by id: the members of the hinted pools, or without
   * a hint the shared pool's and the hosts in no pool.
   */
  async everyPassing(em: EntityManager, project: string, wanted: string[]): Promise<string[]> {
    const { rows } =
      wanted.length > 0
        ? await sql<{ names: string[] | null }>(em, HINTED_SQL, [project, wanted])
        : await sql<{ names: string[] | null }>(em, UNHINTED_SQL);
    return rows[0]?.names ?? [];
  }

  /**
   * Every registered host with its verdict: one group of the passing hosts (pool null,
   * by id, as `everyPassing` orders them) and one per pool of the others. The answer
   * names every host, so this one reads them all.
   */
  async everyGrouped(em: EntityManager, project: string, wanted: string[]): Promise<PoolGroup[]> {
    const { rows } = await sql<PoolGroup>(em, GROUPED_SQL, [project, wanted]);
    return rows;
  }

  /** The named hosts (null: every host) of the free pool that no lease holds at `now`. */
  async freeNow(em: EntityManager, names: string[] | null, now: Date): Promise<string[]> {
    const { rows } = await sql<{ names: string[] | null }>(em, FREE_NOW_SQL, [names, now]);
    return rows[0]?.names ?? [];
  }

  private async probe(em: EntityManager, names: string[]): Promise<boolean> {
    const fleet = await this.fleetSize(em);
    return fleet > 0 ? names.length <= fleet / 4 : names.length <= PROBED_NAMES;
  }

  /** The number of hosts as the planner last counted them (0 before any ANALYZE). */
  private async fleetSize(em: EntityManager): Promise<number> {
    const now = performance.now();
    if (now - this.fleet.readAt < FLEET_SIZE_TTL_MS) return this.fleet.hosts;
    const { rows } = await sql<{ hosts: number }>(
      em,
      `SELECT greatest(reltuples, 0)::float8 AS hosts FROM pg_class WHERE oid = 'hosts'::regclass`,
    );
    this.fleet = { hosts: rows[0]?.hosts ?? 0, readAt: now };
    return this.fleet.hosts;
  }
}
