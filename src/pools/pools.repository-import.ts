import type { EntityManager } from 'typeorm';
import { POOL_KINDS_SQL } from './pools.repository.js';
import { sql } from '../database/sql.js';
import { hostJoin } from './hosts.repository.js';

/*
 * Part of pools.repository.ts (the SQL of aggregates and their memberships): the Blazar
 * importer's bulk statements (import/write.ts) and adoption's reads (import/adopt.ts).
 */

/** Puts hosts into the freepool (named `pool`), as the importer registers them. */
export async function joinFreepool(
  tx: EntityManager,
  hostIds: number[],
  pool: string,
): Promise<void> {
  await sql(
    tx,
    `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
       SELECT a.id, h, 'freepool', now() FROM aggregates a, unnest($1::int[]) h WHERE a.name = $2`,
    [hostIds, pool],
  );
}

/** Topology aggregates (`rack:r1`) and their members, from (host, level, value) triples. */
export async function insertTopology(
  tx: EntityManager,
  pairs: { id: number; level: string; value: string }[],
): Promise<void> {
  const names = pairs.map((p) => `${p.level}:${p.value}`);
  await sql(
    tx,
    `INSERT INTO aggregates (name, kind, metadata, created_at)
     SELECT DISTINCT n, 'topology', jsonb_build_object('level', l, 'value', v), now()
       FROM unnest($1::text[], $2::text[], $3::text[]) AS x(n, l, v)
     ON CONFLICT (name) DO NOTHING`,
    [names, pairs.map((p) => p.level), pairs.map((p) => p.value)],
  );
  await sql(
    tx,
    `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
     SELECT a.id, x.h, 'topology', now() FROM unnest($1::int[], $2::text[]) AS x(h, n)
       JOIN aggregates a ON a.name = x.n`,
    [pairs.map((p) => p.id), names],
  );
}

/**
 * Reservation pools and instance aggregates with their members, as a start makes them: a
 * host of a reservation pool leaves the pool it was in.
 */
export async function insertReservationPools(
  tx: EntityManager,
  pools: { name: string; kind: string; zone: string | null; metadata: string }[],
  members: { name: string; host: number; kind: string }[],
): Promise<void> {
  await sql(
    tx,
    `INSERT INTO aggregates (name, kind, availability_zone, metadata, created_at)
     SELECT *, now() FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])`,
    [
      pools.map((p) => p.name),
      pools.map((p) => p.kind),
      pools.map((p) => p.zone),
      pools.map((p) => p.metadata),
    ],
  );
  const pooled = members.filter((m) => m.kind === 'reservation').map((m) => m.host);
  // A host is in one pool at a time: out of the freepool into its reservation's.
  await sql(
    tx,
    `DELETE FROM aggregate_hosts WHERE host_id = ANY($1::int[]) AND kind IN ${POOL_KINDS_SQL}`,
    [pooled],
  );
  await sql(
    tx,
    `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
     SELECT a.id, x.h, x.k, now() FROM unnest($1::text[], $2::int[], $3::text[]) AS x(n, h, k)
       JOIN aggregates a ON a.name = x.n`,
    [members.map((m) => m.name), members.map((m) => m.host), members.map((m) => m.kind)],
  );
}

/** Each pooled host's name and pool, by name. */
export async function poolsByHostName(
  em: EntityManager,
): Promise<{ host: string; pool: string }[]> {
  const { rows } = await sql<{ host: string; pool: string }>(
    em,
    `SELECT h.hypervisor_hostname AS host, a.name AS pool
       FROM aggregate_hosts ah JOIN aggregates a ON a.id = ah.aggregate_id ${hostJoin('h', 'ah.host_id')}
      WHERE ah.kind IN ${POOL_KINDS_SQL}`,
  );
  return rows;
}

export interface ReservationAggregate {
  name: string;
  kind: string;
  availability_zone: string | null;
  metadata: Record<string, string>;
  hosts: string[];
}

/** The reservation pools and instance aggregates with their members' names. */
export async function reservationAggregates(em: EntityManager): Promise<ReservationAggregate[]> {
  const { rows } = await sql<ReservationAggregate>(
    em,
    `SELECT a.name, a.kind, a.availability_zone, a.metadata,
            coalesce(array_agg(h.hypervisor_hostname ORDER BY h.hypervisor_hostname)
                     FILTER (WHERE h.id IS NOT NULL), '{}') AS hosts
       FROM aggregates a LEFT JOIN aggregate_hosts ah ON ah.aggregate_id = a.id
       LEFT ${hostJoin('h', 'ah.host_id')}
      WHERE a.kind IN ('reservation', 'instance') GROUP BY a.id`,
  );
  return rows;
}
