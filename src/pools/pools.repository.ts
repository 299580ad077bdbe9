import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { NotFound } from '../common/errors.js';
import type { JsonObject } from '../common/json.js';
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

/** Memberships that are a host's pool: a host has one at most. */
const POOL_KINDS = `('freepool', 'shared', 'recycle', 'reservation')`;
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
                      WHERE ah.host_id = m.host_id AND ah.kind IN ${POOL_KINDS} RETURNING ah.host_id)
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

  /** The host, locked for a pool change; 404 when there is none. */
  async lockHost(tx: EntityManager, hostId: number): Promise<{ id: number; name: string }> {
    const { rows } = await sql<{ id: number; name: string }>(
      tx,
      `SELECT id, hypervisor_hostname AS name FROM hosts WHERE id = $1 FOR UPDATE`,
      [hostId],
    );
    if (rows.length === 0) throw new NotFound('host_id', String(hostId));
    return rows[0];
  }

  async poolOf(
    em: EntityManager,
    hostId: number,
  ): Promise<{ name: string; kind: AggregateKind } | null> {
    const { rows } = await sql<{ name: string; kind: AggregateKind }>(
      em,
      `SELECT a.name, a.kind FROM aggregate_hosts ah JOIN aggregates a ON a.id = ah.aggregate_id
        WHERE ah.host_id = $1 AND ah.kind IN ('freepool', 'shared', 'recycle', 'reservation')`,
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
         LEFT JOIN hosts h ON h.id = ah.host_id
        GROUP BY a.id ORDER BY a.id`,
    );
    return rows;
  }
}
