import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import { migrate, openDatabase, type Database } from '../src/database/data-source.js';
import { MIGRATIONS } from '../src/database/migration-list.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';

jest.setTimeout(60_000);

const NAMES = MIGRATIONS.map((m) => new m().name);
const CORE_TABLES = ['events', 'idempotency_keys', 'leases', 'reservations'];

describe('migrations and database invariants on PostgreSQL', () => {
  const databases: TestDatabase[] = [];
  const opened: Database[] = [];
  const clients: Client[] = [];

  /** A fresh, empty database per test: no test depends on another's leftovers. */
  async function fresh(): Promise<TestDatabase> {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  }
  async function open(db: TestDatabase, poolSize = 2): Promise<Database> {
    const database = await openDatabase({ databaseUrl: db.url, dataDir: '' }, poolSize);
    opened.push(database);
    return database;
  }
  async function sql(db: TestDatabase): Promise<Client> {
    const client = await connect(db.url);
    clients.push(client);
    return client;
  }
  async function migrated(): Promise<{ db: TestDatabase; client: Client }> {
    const db = await fresh();
    const database = await open(db, 1);
    await migrate(database.dataSource);
    return { db, client: await sql(db) };
  }
  async function tables(client: Client): Promise<string[]> {
    const { rows } = await client.query<{ tablename: string }>(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
    );
    return rows.map((r) => r.tablename);
  }

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.end()));
    await Promise.all(opened.splice(0).map((d) => d.close()));
    await Promise.all(databases.splice(0).map((d) => d.drop()));
  });

  async function insertLease(client: Client, start: string, end: string): Promise<string> {
    const id = randomUUID();
    await client.query(
      `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, created_at)
       VALUES ($1, 'inv', 'p', 'u', $2, $3, 'PENDING', now())`,
      [id, start, end],
    );
    return id;
  }
  async function insertEvent(
    client: Client,
    leaseId: string,
    type: string,
    status: string,
    claimExpiresAt: Date | null,
  ): Promise<void> {
    await client.query(
      `INSERT INTO events (id, lease_id, event_type, time, status, claim_expires_at, created_at)
       VALUES ($1, $2, $3, now(), $4, $5, now())`,
      [randomUUID(), leaseId, type, status, claimExpiresAt],
    );
  }
  async function insertReservation(client: Client, leaseId: string): Promise<void> {
    await client.query(
      `INSERT INTO reservations (id, lease_id, resource_type, status, created_at)
       VALUES ($1, $2, 'physical:host', 'pending', now())`,
      [randomUUID(), leaseId],
    );
  }

  it('should apply each migration exactly once when three replicas migrate concurrently', async () => {
    const db = await fresh();
    const replicas = await Promise.all([1, 2, 3].map(() => open(db)));

    const ran = await Promise.all(replicas.map((r) => migrate(r.dataSource)));

    // The advisory lock serialises them: together they ran every migration once.
    expect(ran.flat().sort()).toEqual([...NAMES].sort());
    const client = await sql(db);
    const history = await client.query<{ name: string; n: number }>(
      `SELECT name, count(*)::int AS n FROM migrations GROUP BY name ORDER BY name`,
    );
    expect(history.rows).toEqual([...NAMES].sort().map((name) => ({ name, n: 1 })));
    const ext = await client.query(`SELECT extname FROM pg_extension WHERE extname = 'btree_gist'`);
    expect(ext.rowCount).toBe(1);
    expect(await tables(client)).toEqual(expect.arrayContaining(CORE_TABLES));
  });

  it('should do nothing when migrate() runs on an up-to-date database', async () => {
    const db = await fresh();
    const database = await open(db, 1);
    expect(await migrate(database.dataSource)).toEqual(NAMES);
    const client = await sql(db);
    const before = (await client.query(`SELECT id, name FROM migrations ORDER BY id`)).rows;

    expect(await migrate(database.dataSource)).toEqual([]);

    expect((await client.query(`SELECT id, name FROM migrations ORDER BY id`)).rows).toEqual(
      before,
    );
  });

  it('should reject a lease whose end is not after its start when the application sends one', async () => {
    const { client } = await migrated();
    for (const [start, end] of [
      ['2040-01-02 00:00Z', '2040-01-01 00:00Z'],
      ['2040-01-01 00:00Z', '2040-01-01 00:00Z'],
    ]) {
      await expect(insertLease(client, start, end)).rejects.toMatchObject({
        code: '23514',
        constraint: 'leases_window',
      });
    }
    expect((await client.query(`SELECT 1 FROM leases`)).rowCount).toBe(0);
  });

  it('should allow only one running event per lease when two are marked IN_PROGRESS', async () => {
    const { client } = await migrated();
    const lease = await insertLease(client, '2040-01-01 00:00Z', '2040-01-02 00:00Z');
    const other = await insertLease(client, '2040-01-01 00:00Z', '2040-01-02 00:00Z');
    const later = new Date(Date.now() + 60_000);
    await insertEvent(client, lease, 'start_lease', 'IN_PROGRESS', later);

    await expect(
      insertEvent(client, lease, 'end_lease', 'IN_PROGRESS', later),
    ).rejects.toMatchObject({ code: '23505', constraint: 'events_one_running' });

    // Not running, or another lease's: both fine.
    await insertEvent(client, lease, 'end_lease', 'UNDONE', null);
    await insertEvent(client, other, 'start_lease', 'IN_PROGRESS', later);
    const running = await client.query(`SELECT 1 FROM events WHERE status = 'IN_PROGRESS'`);
    expect(running.rowCount).toBe(2);
  });

  it('should tie IN_PROGRESS to a claim expiry when an event is written without one', async () => {
    const { client } = await migrated();
    const lease = await insertLease(client, '2040-01-01 00:00Z', '2040-01-02 00:00Z');

    await expect(
      insertEvent(client, lease, 'start_lease', 'IN_PROGRESS', null),
    ).rejects.toMatchObject({ code: '23514', constraint: 'events_claim' });
    // And the other way round: a claim expiry on an event that is not running.
    await expect(
      insertEvent(client, lease, 'start_lease', 'UNDONE', new Date()),
    ).rejects.toMatchObject({ code: '23514', constraint: 'events_claim' });
    expect((await client.query(`SELECT 1 FROM events`)).rowCount).toBe(0);
  });

  it('should remove reservations and events with their lease when the lease row is deleted', async () => {
    const { client } = await migrated();
    const doomed = await insertLease(client, '2040-01-01 00:00Z', '2040-01-02 00:00Z');
    const kept = await insertLease(client, '2040-01-01 00:00Z', '2040-01-02 00:00Z');
    for (const lease of [doomed, kept]) {
      await insertReservation(client, lease);
      await insertReservation(client, lease);
      await insertEvent(client, lease, 'start_lease', 'UNDONE', null);
      await insertEvent(client, lease, 'end_lease', 'UNDONE', null);
    }

    await client.query(`DELETE FROM leases WHERE id = $1`, [doomed]);

    const left = await client.query<{ table: string; lease_id: string }>(
      `SELECT 'reservations' AS table, lease_id FROM reservations
       UNION ALL SELECT 'events', lease_id FROM events ORDER BY 1`,
    );
    expect(left.rows).toEqual([
      { table: 'events', lease_id: kept },
      { table: 'events', lease_id: kept },
      { table: 'reservations', lease_id: kept },
      { table: 'reservations', lease_id: kept },
    ]);
  });

  it('should drop the tables when the migrations are undone and recreate them when run again', async () => {
    const db = await fresh();
    const database = await open(db, 1);
    await migrate(database.dataSource);
    const client = await sql(db);
    const full = await tables(client);
    expect(full).toEqual(expect.arrayContaining(CORE_TABLES));

    for (let left = NAMES.length - 1; left >= 0; left--) {
      await database.dataSource.undoLastMigration();
      const history = await client.query<{ name: string }>(
        `SELECT name FROM migrations ORDER BY id`,
      );
      expect(history.rows.map((r) => r.name)).toEqual(NAMES.slice(0, left));
    }

    expect(await tables(client)).toEqual(['migrations']);
    // Every down left a clean slate: the ups apply again as on a fresh database.
    expect(await migrate(database.dataSource)).toEqual(NAMES);
    expect(await tables(client)).toEqual(full);
  });
});
