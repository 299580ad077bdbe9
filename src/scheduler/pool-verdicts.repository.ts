import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';

/** What a pool's hosts get: passing, or which refusal (worded by the filter). */
export type Verdict = 'pass' | 'pooled' | 'elsewhere' | 'foreign';

/** Hosts that share a pool share a verdict, so the queries answer one row per pool. */
export interface PoolGroup {
  pool: string | null;
  verdict: Verdict;
  names: string[];
}

const POOL_KINDS = `('freepool', 'shared', 'recycle', 'reservation')`;

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
 * Named hosts are looked up one index probe each while they are at most this many, or a
 * quarter of the fleet: left to itself the planner hashes the whole hosts table for a few
 * hundred names (it costs each probe as a disk read). Past that, a hash join is cheaper,
 * and the planner picks it.
 */
export const PROBED_NAMES = 1000;

/** How often the fleet's size (the planner's count of hosts) is read again. */
const FLEET_SIZE_TTL_MS = 60_000;

/**
 * The named hosts ($3) that sit in a pool, one row per pool with its verdict; with $4, only
 * the pools whose verdict is not $4. `probe`: one index probe per name.
 */
export function namedSql(probe: boolean): string {
  const member = probe
    ? `CROSS JOIN LATERAL (
             SELECT ah.aggregate_id FROM hosts h
               JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS}
              WHERE h.hypervisor_hostname = u.n
              LIMIT 1) m`
    : `JOIN hosts h ON h.hypervisor_hostname = u.n
           JOIN aggregate_hosts m ON m.host_id = h.id AND m.kind IN ${POOL_KINDS}`;
  return `
  SELECT p.name AS pool, ${VERDICT} AS verdict, g.names
    FROM (SELECT m.aggregate_id, array_agg(u.n) AS names
            FROM unnest($3::text[]) u(n)
           ${member}
           GROUP BY m.aggregate_id) g
    JOIN aggregates p ON p.id = g.aggregate_id
   WHERE $4::text IS NULL OR (${VERDICT}) <> $4::text`;
}

const NAMED_SQL = { probed: namedSql(true), joined: namedSql(false) };

/** The passing members of the hinted pools, by host id: the planner starts from the pools. */
export const HINTED_SQL = `
  SELECT array_agg(h.hypervisor_hostname ORDER BY h.id) AS names
    FROM aggregates p
    JOIN aggregate_hosts ah ON ah.aggregate_id = p.id
    JOIN hosts h ON h.id = ah.host_id
   WHERE p.kind = 'reservation' AND p.name = ANY($2::text[]) AND (${VERDICT}) = 'pass'`;

/**
 * Without a hint, the shared pool's members and the hosts in no pool, by host id. Ids
 * first (index-only scans of the one-pool index), names only for the hosts that pass.
 */
export const UNHINTED_SQL = `
  WITH passing AS MATERIALIZED (
    SELECT ah.host_id AS id FROM aggregate_hosts ah WHERE ah.kind = 'shared'
    UNION ALL
    SELECT x.id FROM hosts x
     WHERE NOT EXISTS (SELECT 1 FROM aggregate_hosts ah
                        WHERE ah.host_id = x.id AND ah.kind IN ${POOL_KINDS}))
  SELECT array_agg(h.hypervisor_hostname ORDER BY h.id) AS names
    FROM passing JOIN hosts h ON h.id = passing.id`;

/** Every host with its verdict: the passing ones as one group (pool null), by id. */
export const GROUPED_SQL = `
  SELECT CASE WHEN v.verdict = 'pass' THEN NULL ELSE v.pool END AS pool, v.verdict,
         array_agg(v.name ORDER BY v.id) AS names
    FROM (SELECT h.id, h.hypervisor_hostname AS name, p.name AS pool, ${VERDICT} AS verdict
            FROM hosts h
            LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS}
            LEFT JOIN aggregates p ON p.id = ah.aggregate_id) v
   GROUP BY 1, 2`;

/** The verdict of a host in no pool, or unknown to Climate: the pools are all it rules. */
export function outsideVerdict(wanted: string[]): Verdict {
  return wanted.length === 0 ? 'pass' : 'elsewhere';
}

/**
 * The filter's reads. Each costs what its request names: a probe per named host, the
 * hinted pools' members, or (asked about every host) what the answer lists.
 */
@Injectable()
export class PoolVerdictsRepository {
  private fleet = { hosts: 0, readAt: -Infinity };

  /**
   * The named hosts that sit in a pool, grouped by pool with its verdict; a name in no
   * group gets `outsideVerdict`. Unless `all`, only the groups whose verdict differs from
   * that, which is all an unexplained answer needs.
   */
  async named(
    em: EntityManager,
    names: string[],
    project: string,
    wanted: string[],
    all: boolean,
  ): Promise<PoolGroup[]> {
    const probe = names.length <= PROBED_NAMES || names.length <= (await this.fleetSize(em)) / 4;
    const text = probe ? NAMED_SQL.probed : NAMED_SQL.joined;
    const { rows } = await sql<PoolGroup>(em, text, [
      project,
      wanted,
      names,
      all ? null : outsideVerdict(wanted),
    ]);
    return rows;
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

  /**
   * Every registered host that passes, by id: the members of the hinted pools, or without
   * a hint the shared pool's and the hosts in no pool (found in the one-pool index).
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
}
