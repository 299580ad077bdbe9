import type { EntityManager } from 'typeorm';
import { NotFound } from '../common/errors.js';
import { columns, sql } from '../database/sql.js';
import type { HostQuery } from '../requirements/host-query.js';

/**
 * The SQL of the hosts table (docs/development.md, "Who owns each table"). Here, at the
 * bottom of the inventory floor, because pools/, hosts/ and every type above read hosts;
 * the host records themselves are written through the Host entity (hosts/).
 */

/** `JOIN hosts <h> ON <h>.id = <hostId>`: the host a row (allocation, claim, membership) is on. */
export function hostJoin(h: string, hostId: string): string {
  return `JOIN hosts ${h} ON ${h}.id = ${hostId}`;
}

/** `JOIN hosts <h> ON <h>.hypervisor_hostname = <name>`: the host a name (Nova's) stands for. */
export function hostNamed(h: string, name: string): string {
  return `JOIN hosts ${h} ON ${h}.hypervisor_hostname = ${name}`;
}

/** `JOIN hosts <h> ON <h>.capabilities ? <property>`: the hosts with a property. */
export function hostsWith(h: string, property: string): string {
  return `JOIN hosts ${h} ON ${h}.capabilities ? ${property}`;
}

/** `hosts <h>`: the table, for a statement that walks the hosts (a pick, a capacity). */
export function hostsAs(h: string): string {
  return `hosts ${h}`;
}

/**
 * `asked` rows (name, i) for the names of `names` (an SQL text[], in order) or, when it is
 * NULL, every host (by id).
 */
export function namesOrEveryHost(names: string): string {
  return `SELECT n AS name, i FROM unnest(${names}::text[]) WITH ORDINALITY u(n, i) WHERE ${names}::text[] IS NOT NULL
    UNION ALL SELECT hypervisor_hostname, id FROM hosts WHERE ${names}::text[] IS NULL`;
}

/** SQL: a host whose id is `id` (SQL) exists. */
export function hostExistsSql(id: string): string {
  return `EXISTS (SELECT 1 FROM hosts h WHERE h.id = ${id})`;
}

/** Locks host rows in id order (one order everywhere, so lockers never deadlock). */
export async function lockHosts(tx: EntityManager, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await sql(tx, `SELECT id FROM hosts WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids]);
}

/** Of `ids`, the hosts this transaction could lock, in id order (others are locked now). */
export async function tryLockHosts(tx: EntityManager, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<{ id: number }>(
    tx,
    `SELECT id FROM hosts WHERE id = ANY($1::int[]) ORDER BY id FOR UPDATE SKIP LOCKED`,
    [ids],
  );
  return rows.map((r) => r.id);
}

/** Locks the host against deletion (FOR SHARE); false when there is none. */
export async function shareLockHost(tx: EntityManager, hostId: number): Promise<boolean> {
  const { rows } = await sql(tx, `SELECT id FROM hosts WHERE id = $1 FOR SHARE`, [hostId]);
  return rows.length > 0;
}

/** The host, locked for a pool change; 404 when there is none. */
export async function lockHost(
  tx: EntityManager,
  hostId: number,
): Promise<{ id: number; name: string }> {
  const { rows } = await sql<{ id: number; name: string }>(
    tx,
    `SELECT id, hypervisor_hostname AS name FROM hosts WHERE id = $1 FOR UPDATE`,
    [hostId],
  );
  if (rows.length === 0) throw new NotFound('host_id', String(hostId));
  return rows[0];
}

/** The hosts of `ids` with their names, by id. */
export async function namedHosts(
  em: EntityManager,
  ids: number[],
): Promise<{ id: number; name: string }[]> {
  const { rows } = await sql<{ id: number; name: string }>(
    em,
    `SELECT id, hypervisor_hostname AS name FROM hosts WHERE id = ANY($1) ORDER BY id`,
    [ids],
  );
  return rows;
}

/** The ids of the hosts `q` matches. */
export async function matchingHostIds(em: EntityManager, q: HostQuery): Promise<number[]> {
  const { rows } = await sql<{ id: number }>(em, `SELECT h.id FROM hosts h WHERE ${q.where}`, [
    ...q.params,
  ]);
  return rows.map((r) => r.id);
}

export async function unreservableHostIds(tx: EntityManager): Promise<number[]> {
  const { rows } = await sql<{ id: number }>(tx, `SELECT id FROM hosts WHERE NOT reservable`);
  return rows.map((r) => r.id);
}

/** The admin's word replaces a report's: the host is no longer marked reported down. */
export async function clearReportedDown(tx: EntityManager, hostId: number): Promise<void> {
  await sql(tx, `UPDATE hosts SET reported_down = false WHERE id = $1`, [hostId]);
}

/** How a report names a host: the driver by hypervisor, Nova's notifications by service host. */
export type HostKey = 'hypervisor_hostname' | 'service_name';

/**
 * Hosts reported down become unreservable, those reported up reservable again, unless an
 * admin set them (see `followHostStates`). Returns how many hosts changed.
 */
export async function setReportedStates(
  db: EntityManager,
  key: HostKey,
  down: string[],
  up: string[],
  now: Date,
): Promise<number> {
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

/** Brings every host's placement_cost in line with placement_weights; returns how many changed. */
export async function repriceHosts(tx: EntityManager): Promise<number> {
  const changed = await sql(
    tx,
    `UPDATE hosts SET placement_cost = host_placement_cost(capabilities)
          WHERE placement_cost <> host_placement_cost(capabilities)`,
  );
  return changed.affected;
}

/* The Blazar importer's bulk rows (columns by name, dates as ISO text or Date). */

const HOST = [
  'id',
  'hypervisor_hostname',
  'service_name',
  'vcpus',
  'memory_mb',
  'local_gb',
  'hypervisor_type',
  'hypervisor_version',
  'cpu_info',
  'availability_zone',
  'reservable',
  'reported_down',
] as const;
export type HostRecord = Record<
  (typeof HOST)[number] | 'trust_id' | 'created_at' | 'updated_at',
  unknown
> & {
  capabilities: unknown;
};

export async function insertHostRows(tx: EntityManager, rows: HostRecord[]): Promise<void> {
  await sql(
    tx,
    `INSERT INTO hosts (id, hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
                          hypervisor_version, cpu_info, availability_zone, reservable, reported_down,
                          capabilities, trust_id, created_at, updated_at)
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[],
                            $8::int[], $9::text[], $10::text[], $11::bool[], $12::bool[], $13::jsonb[],
                            $14::text[], $15::timestamptz[], $16::timestamptz[])`,
    [
      ...columns(rows, HOST),
      rows.map((h) => JSON.stringify(h.capabilities)),
      ...columns(rows, ['trust_id', 'created_at', 'updated_at']),
    ],
  );
}

/** New hosts registered later get ids after the imported ones. */
export async function bumpHostIds(tx: EntityManager): Promise<void> {
  await sql(tx, `SELECT setval('hosts_id_seq', greatest((SELECT max(id) FROM hosts), 1))`);
}

/** Every host row with all its columns. */
export async function hostRecords<T>(em: EntityManager): Promise<T[]> {
  const { rows } = await sql<T>(
    em,
    `SELECT id, hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
            hypervisor_version, cpu_info, availability_zone, reservable, reported_down,
            capabilities, trust_id, created_at, updated_at FROM hosts`,
  );
  return rows;
}
