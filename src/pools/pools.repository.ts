import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { JsonObject } from '../common/json.js';
import { hostJoin } from './hosts.repository.js';
import { sql, type SqlOptions } from '../database/sql.js';
import { HOST_USAGE } from './host-usage.js';
import { FREEPOOL } from './pool-names.js';

/**
 * What an aggregate is: the freepool, the shared pool, the recycle pool, one pool per
 * started host reservation, one per instance reservation, or a topology label.
 */
export type AggregateKind =
  'freepool' | 'shared' | 'recycle' | 'reservation' | 'instance' | 'topology';

export interface AggregateRow {
  id: number;
  name: string;
  kind: AggregateKind;
  availability_zone: string | null;
  metadata: JsonObject;
  hosts: string[];
}

/** SQL: the kinds of aggregate that are a host's pool (a host is in one at most). */
export const POOL_KINDS_SQL = `('freepool', 'shared', 'recycle', 'reservation')`;

/** SQL: host `h` is not in the shared pool. */
export function notShared(h: string): string {
  return `NOT EXISTS (SELECT 1 FROM aggregate_hosts sp WHERE sp.host_id = ${h}.id AND sp.kind = 'shared')`;
}

/** `JOIN aggregates <a> ON <a>.name = <name>`: the aggregate named after a reservation. */
export function aggregateNamed(a: string, name: string): string {
  return `JOIN aggregates ${a} ON ${a}.name = ${name}`;
}

/** SQL: (host_id) of the members of the aggregate whose id is `id` (SQL). */
export function membersOfSql(id: string): string {
  return `SELECT host_id FROM aggregate_hosts WHERE aggregate_id = ${id}`;
}

/** SQL: host_id of the members of the aggregate named `name` (SQL). */
export function memberIdsNamedSql(name: string): string {
  return `SELECT m.host_id FROM aggregate_hosts m JOIN aggregates r ON r.id = m.aggregate_id
           WHERE r.name = ${name}`;
}

/** SQL: the name of the pool host `h` is in (freepool, shared, recycle or reservation). */
export function poolNameOfSql(h: string): string {
  return `(SELECT p.name FROM aggregate_hosts ah JOIN aggregates p ON p.id = ah.aggregate_id
            WHERE ah.host_id = ${h}.id
              AND ah.kind IN ${POOL_KINDS_SQL} LIMIT 1)`;
}

/** SQL: (id, metadata) of the instance reservation's aggregate named `name`. */
export function instancePoolSql(name: string): string {
  return `SELECT id, metadata FROM aggregates WHERE kind = 'instance' AND name = ${name}`;
}

/** `JOIN aggregate_hosts <ah> ON <ah>.aggregate_id = <a>.id`: the memberships of aggregate `a`. */
export function membershipJoin(ah: string, a: string): string {
  return `JOIN aggregate_hosts ${ah} ON ${ah}.aggregate_id = ${a}.id`;
}

/** SQL: (name) of the hosts of the aggregate named `name` (SQL) of kind `kind`. */
export function memberNamesSql(name: string, kind: AggregateKind): string {
  return `SELECT h.hypervisor_hostname AS name FROM aggregate_hosts ah
         JOIN aggregates a ON a.id = ah.aggregate_id ${hostJoin('h', 'ah.host_id')}
        WHERE a.name = ${name} AND a.kind = '${kind}'`;
}

/** Aggregates that belong to a reservation or a label, which deleteAggregate may delete. */
const OWN_KINDS = `('reservation', 'instance', 'topology')`;

/** Pool and topology membership in Climate's database: the record the filter reads. */
@Injectable()
export class PoolsRepository {
  async ensure(
    tx: EntityManager,
    name: string,
    kind: AggregateKind,
    now: Date,
    options: { availabilityZone?: string | null; metadata?: JsonObject } = {},
  ): Promise<number> {
    const { rows } = await sql<{ id: number }>(
      tx,
      `INSERT INTO aggregates (name, kind, availability_zone, metadata, created_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (name) DO UPDATE SET metadata = EXCLUDED.metadata, updated_at = $5
       RETURNING id`,
      [name, kind, options.availabilityZone ?? null, options.metadata ?? {}, now],
      { prepare: true },
    );
    return rows[0].id;
  }

  /** Puts hosts into a pool, taking them out of whatever pool they were in. */
  async moveHosts(tx: EntityManager, hostIds: number[], pool: string, now: Date): Promise<void> {
    await this.move(tx, new Map(hostIds.map((id) => [id, pool])), now);
  }

  /** Puts each host into its pool (host id -> pool name) in one statement. */
  async move(
    tx: EntityManager,
    pools: Map<number, string>,
    now: Date,
    options: SqlOptions = {},
  ): Promise<void> {
    if (pools.size === 0) return;
    await sql(
      tx,
      `WITH m AS (SELECT * FROM unnest($1::int[], $2::text[]) AS m(host_id, pool)),
            gone AS (DELETE FROM aggregate_hosts ah USING m
                      WHERE ah.host_id = m.host_id AND ah.kind IN ${POOL_KINDS_SQL} RETURNING ah.host_id)
       INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
       SELECT a.id, m.host_id, a.kind, $3 FROM m JOIN aggregates a ON a.name = m.pool
        -- reads gone, so the old memberships are deleted before the new ones are checked
        -- against aggregate_hosts_one_pool
        WHERE (SELECT count(*) FROM gone) >= 0`,
      [[...pools.keys()], [...pools.values()], now],
      { ...options, prepare: true },
    );
  }

  /**
   * Empties a reservation's pool and deletes it, in one statement: its hosts go to
   * `target`, except that with 'shared' a host another reservation holds from `now` on
   * goes to the freepool. Returns where each host went.
   */
  async dissolve(
    em: EntityManager,
    name: string,
    target: 'freepool' | 'recycle' | 'shared',
    now: Date,
  ): Promise<Map<number, string>> {
    const { rows } = await sql<{ host_id: number; pool: string }>(
      em,
      `WITH gone AS (DELETE FROM aggregate_hosts ah USING aggregates a
                      WHERE a.id = ah.aggregate_id AND a.name = $1 RETURNING ah.host_id),
            target AS (
              SELECT g.host_id,
                     CASE WHEN $2 = 'shared' AND EXISTS (
                            SELECT 1 FROM ${HOST_USAGE} u
                             WHERE u.host_id = g.host_id AND upper(u.during) > $3
                               AND u.reservation_id::text <> $1::text)
                          THEN $4 ELSE $2 END AS pool
                FROM gone g),
            moved AS (INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
                      SELECT a.id, t.host_id, a.kind, $3 FROM target t JOIN aggregates a ON a.name = t.pool),
            dropped AS (DELETE FROM aggregates WHERE name = $1 AND kind IN ${OWN_KINDS})
       SELECT host_id, pool FROM target`,
      [name, target === 'freepool' ? FREEPOOL : target, now, FREEPOOL],
      { prepare: true },
    );
    return new Map(rows.map((r) => [r.host_id, r.pool]));
  }

  /** Hosts of a pool among `hostIds` (all of them when omitted). */
  async hostsIn(tx: EntityManager, pool: string, hostIds?: number[]): Promise<number[]> {
    const { rows } = await sql<{ host_id: number }>(
      tx,
      `SELECT ah.host_id FROM aggregate_hosts ah JOIN aggregates a ON a.id = ah.aggregate_id
        WHERE a.name = $1 AND ($2::int[] IS NULL OR ah.host_id = ANY($2))`,
      [pool, hostIds ?? null],
    );
    return rows.map((r) => r.host_id);
  }

  async exists(em: EntityManager, name: string): Promise<boolean> {
    const { rows } = await sql(em, `SELECT 1 FROM aggregates WHERE name = $1`, [name]);
    return rows.length > 0;
  }

  /** The hosts of the recycle pool, with when each joined it. */
  async recycled(em: EntityManager): Promise<{ id: number; name: string; since: Date }[]> {
    const { rows } = await sql<{ id: number; name: string; since: Date }>(
      em,
      `SELECT h.id, h.hypervisor_hostname AS name, ah.since
         FROM aggregate_hosts ah JOIN aggregates a ON a.id = ah.aggregate_id
         ${hostJoin('h', 'ah.host_id')} WHERE a.name = 'recycle'`,
    );
    return rows;
  }

  /** Each pooled host's pool (freepool, shared, recycle or a reservation's). */
  async poolNames(em: EntityManager): Promise<Map<number, string>> {
    const { rows } = await sql<{ host_id: number; name: string }>(
      em,
      `SELECT ah.host_id, a.name FROM aggregate_hosts ah JOIN aggregates a ON a.id = ah.aggregate_id
        WHERE ah.kind IN ${POOL_KINDS_SQL}`,
    );
    return new Map(rows.map((r) => [r.host_id, r.name]));
  }

  /** The members of an aggregate other than `keep`, with their names. */
  async membersBut(
    tx: EntityManager,
    aggregateId: number,
    keep: number[],
  ): Promise<{ id: number; name: string }[]> {
    const { rows } = await sql<{ id: number; name: string }>(
      tx,
      `SELECT h.id, h.hypervisor_hostname AS name FROM aggregate_hosts ah ${hostJoin('h', 'ah.host_id')}
          WHERE ah.aggregate_id = $1 AND NOT (h.id = ANY($2::int[]))`,
      [aggregateId, keep],
    );
    return rows;
  }

  /**
   * An instance reservation's aggregate: `gone` hosts leave it unless `held` (SQL over the
   * reservation and membership `ah`: the reservation has slots there again) and `added`
   * join it; one statement.
   */
  async setInstanceMembers(
    em: EntityManager,
    pool: { aggregateId: number; reservationId: string },
    members: { gone: number[]; added: number[] },
    now: Date,
    held: (reservation: string, ah: string) => string,
  ): Promise<void> {
    await sql(
      em,
      `WITH gone AS (
         DELETE FROM aggregate_hosts ah WHERE ah.aggregate_id = $1 AND ah.host_id = ANY($2::int[])
            AND NOT EXISTS (${held('$5', 'ah')}))
       INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
       SELECT $1, h, 'instance', $4 FROM unnest($3::int[]) h ON CONFLICT DO NOTHING`,
      [pool.aggregateId, members.gone, members.added, now, pool.reservationId],
    );
  }

  async poolOf(
    em: EntityManager,
    hostId: number,
  ): Promise<{ name: string; kind: AggregateKind } | null> {
    const { rows } = await sql<{ name: string; kind: AggregateKind }>(
      em,
      `SELECT a.name, a.kind FROM aggregate_hosts ah JOIN aggregates a ON a.id = ah.aggregate_id
        WHERE ah.host_id = $1 AND ah.kind IN ${POOL_KINDS_SQL}`,
      [hostId],
    );
    return rows[0] ?? null;
  }

  async deleteAggregate(tx: EntityManager, name: string): Promise<void> {
    await sql(tx, `DELETE FROM aggregates WHERE name = $1 AND kind IN ${OWN_KINDS}`, [name], {
      prepare: true,
    });
  }

  /** Makes the host's topology memberships match its labels (level -> value). */
  async setTopology(
    tx: EntityManager,
    hostId: number,
    labels: Record<string, string>,
    now: Date,
  ): Promise<void> {
    await sql(tx, `DELETE FROM aggregate_hosts WHERE host_id = $1 AND kind = 'topology'`, [hostId]);
    for (const [level, value] of Object.entries(labels)) {
      const name = `${level}:${value}`;
      const id = await this.ensure(tx, name, 'topology', now, { metadata: { level, value } });
      await sql(
        tx,
        `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since) VALUES ($1, $2, 'topology', $3)`,
        [id, hostId, now],
      );
    }
    // Topology aggregates nobody is in any more go away.
    await sql(
      tx,
      `DELETE FROM aggregates a WHERE a.kind = 'topology'
         AND NOT EXISTS (SELECT 1 FROM aggregate_hosts ah WHERE ah.aggregate_id = a.id)`,
    );
  }

  async list(em: EntityManager): Promise<AggregateRow[]> {
    const { rows } = await sql<AggregateRow>(
      em,
      `SELECT a.id, a.name, a.kind, a.availability_zone, a.metadata,
              coalesce(array_agg(h.hypervisor_hostname ORDER BY h.hypervisor_hostname)
                       FILTER (WHERE h.id IS NOT NULL), '{}') AS hosts
         FROM aggregates a
         LEFT JOIN aggregate_hosts ah ON ah.aggregate_id = a.id
         LEFT ${hostJoin('h', 'ah.host_id')}
        GROUP BY a.id ORDER BY a.id`,
    );
    return rows;
  }
}
