/** Reading a Blazar database (MariaDB/MySQL, schema at alembic head 553383923ca0). */
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';

/** One row as read: every value a string or null (dates as naive UTC text). */
export type SourceRow = Record<string, string | null>;

/** The tables an import reads, with the columns it needs from each (chosen by name). */
export const SOURCE_TABLES = {
  computehosts: [
    'id',
    'hypervisor_hostname',
    'service_name',
    'vcpus',
    'memory_mb',
    'local_gb',
    'cpu_info',
    'hypervisor_type',
    'hypervisor_version',
    'availability_zone',
    'trust_id',
    'reservable',
    'created_at',
    'updated_at',
  ],
  resource_properties: [
    'id',
    'resource_type',
    'property_name',
    'private',
    'created_at',
    'updated_at',
  ],
  computehost_extra_capabilities: ['computehost_id', 'property_id', 'capability_value'],
  leases: [
    'id',
    'name',
    'user_id',
    'project_id',
    'start_date',
    'end_date',
    'trust_id',
    'status',
    'degraded',
    'created_at',
    'updated_at',
  ],
  reservations: [
    'id',
    'lease_id',
    'resource_id',
    'resource_type',
    'status',
    'missing_resources',
    'resources_changed',
    'created_at',
    'updated_at',
  ],
  computehost_reservations: [
    'id',
    'reservation_id',
    'count_range',
    'hypervisor_properties',
    'resource_properties',
    'before_end',
    'aggregate_id',
  ],
  instance_reservations: [
    'id',
    'reservation_id',
    'vcpus',
    'memory_mb',
    'disk_gb',
    'amount',
    'affinity',
    'flavor_id',
    'aggregate_id',
    'server_group_id',
    'resource_properties',
  ],
  computehost_allocations: ['id', 'compute_host_id', 'reservation_id'],
  floatingips: [
    'id',
    'floating_network_id',
    'subnet_id',
    'floating_ip_address',
    'reservable',
    'created_at',
    'updated_at',
  ],
  floatingip_reservations: ['id', 'reservation_id', 'network_id', 'amount'],
  required_floatingips: ['id', 'floatingip_reservation_id', 'address'],
  floatingip_allocations: ['id', 'floatingip_id', 'reservation_id'],
  events: ['id', 'lease_id', 'event_type', 'time', 'status', 'created_at', 'updated_at'],
} as const;

export type SourceTable = keyof typeof SOURCE_TABLES;
export type SourceData = Record<SourceTable, SourceRow[]> & {
  /** Rows left out because they were soft-deleted, per table. */
  softDeleted: Partial<Record<SourceTable, number>>;
  alembicVersion: string | null;
  /** Row counts of Blazar tables Climate has nothing for (reported, not imported). */
  notCarried: Record<string, number>;
};

/** Tables read only to be counted: Climate keeps no such rows (see the migration guide). */
const NOT_CARRIED = ['computehost_resource_inventory', 'computehost_trait'];

/** The schema revision this importer was written against. */
export const KNOWN_ALEMBIC_HEAD = '553383923ca0';

/** Connects with a bound on the connect and on each query, so a dead server cannot hang it. */
export async function connectSource(url: string): Promise<Connection> {
  return createConnection({
    uri: url,
    // Blazar's DATETIMEs are naive UTC: read as text, so no time zone is applied.
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    connectTimeout: 10_000,
    charset: 'utf8mb4',
  });
}

const QUERY_TIMEOUT_MS = 600_000;

async function columnsOf(db: Connection, table: string): Promise<Set<string> | null> {
  const [rows] = await db.query<RowDataPacket[]>({
    sql: `SELECT column_name AS c FROM information_schema.columns
           WHERE table_schema = DATABASE() AND table_name = ?`,
    values: [table],
    timeout: QUERY_TIMEOUT_MS,
  });
  if (rows.length === 0) return null;
  return new Set(rows.map((r) => String(r.c)));
}

/**
 * Every row the import needs. Columns are selected by name (their order differs from
 * Blazar's models); a table or column that is missing is named in the error. Older or
 * patched schemas with a soft-delete column (`deleted`) have those rows left out.
 */
export async function readSource(
  db: Connection,
  progress: (line: string) => void = () => undefined,
): Promise<SourceData> {
  const missing: string[] = [];
  const data = { softDeleted: {}, alembicVersion: null, notCarried: {} } as unknown as SourceData;
  for (const [table, wanted] of Object.entries(SOURCE_TABLES) as [
    SourceTable,
    readonly string[],
  ][]) {
    const columns = await columnsOf(db, table);
    if (columns === null) {
      missing.push(`table ${table}`);
      continue;
    }
    const absent = wanted.filter((c) => !columns.has(c));
    if (absent.length > 0) {
      missing.push(...absent.map((c) => `${table}.${c}`));
      continue;
    }
    const deleted = columns.has('deleted');
    const list = wanted.map((c) => `\`${c}\``).join(', ');
    const [rows] = await db.query<RowDataPacket[]>({
      sql: `SELECT ${list}${deleted ? ', `deleted` AS _deleted' : ''} FROM \`${table}\``,
      timeout: QUERY_TIMEOUT_MS,
    });
    const kept: SourceRow[] = [];
    let skipped = 0;
    for (const row of rows) {
      if (deleted && isSoftDeleted(row._deleted)) {
        skipped++;
        continue;
      }
      const out: SourceRow = {};
      for (const c of wanted) out[c] = row[c] === null ? null : String(row[c]);
      kept.push(out);
    }
    data[table] = kept;
    if (skipped > 0) data.softDeleted[table] = skipped;
    progress(
      `read ${table}: ${kept.length} row(s)${skipped > 0 ? `, ${skipped} soft-deleted` : ''}`,
    );
  }
  if (missing.length > 0) {
    throw new Error(
      `This is not a Blazar database this importer can read; missing: ${missing.join(', ')}`,
    );
  }
  for (const table of NOT_CARRIED) {
    if ((await columnsOf(db, table)) === null) continue;
    const [count] = await db.query<RowDataPacket[]>({
      sql: `SELECT count(*) AS n FROM \`${table}\``,
      timeout: QUERY_TIMEOUT_MS,
    });
    data.notCarried[table] = Number(count[0].n);
  }
  const [version] = await db.query<RowDataPacket[]>({
    sql: 'SELECT version_num FROM alembic_version',
    timeout: QUERY_TIMEOUT_MS,
  });
  data.alembicVersion = version.length > 0 ? String(version[0].version_num) : null;
  return data;
}

/** oslo.db's soft delete writes the row's id (or 1) into `deleted`; 0/NULL is live. */
function isSoftDeleted(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  const text = (typeof value === 'string' ? value : JSON.stringify(value)).trim().toLowerCase();
  return !['', '0', 'false'].includes(text);
}
