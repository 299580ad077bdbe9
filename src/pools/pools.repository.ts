import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { NotFound } from '../common/errors.js';
import type { JsonObject } from '../common/json.js';
import { sql } from '../database/sql.js';

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
    );
    return rows[0].id;
  }

  /** Puts hosts into a pool, taking them out of whatever pool they were in. */
  async moveHosts(tx: EntityManager, hostIds: number[], pool: string, now: Date): Promise<void> {
    if (hostIds.length === 0) return;
    await sql(
      tx,
      `DELETE FROM aggregate_hosts WHERE host_id = ANY($1) AND kind IN ('freepool', 'shared', 'recycle', 'reservation')`,
      [hostIds],
    );
    await sql(
      tx,
      `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
       SELECT a.id, h, a.kind, $3 FROM aggregates a, unnest($1::int[]) h WHERE a.name = $2`,
      [hostIds, pool, now],
    );
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
    await sql(
      tx,
      `DELETE FROM aggregates WHERE name = $1 AND kind IN ('reservation', 'instance', 'topology')`,
      [name],
    );
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
