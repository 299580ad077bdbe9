import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { DataSource, DataSourceOptions, MigrationExecutor } from 'typeorm';
import type { Config } from '../config/config.js';
import { boundedClient, type DeadlineClient } from './bounded-client.js';
import { lockDataDir } from './data-dir-lock.js';
import { MIGRATIONS } from './migration-list.js';

/** Any number; all replicas agree on it so migrations run once. */
const MIGRATION_LOCK = 7_316_001;

export interface Database {
  dataSource: DataSource;
  embedded: boolean;
  close(): Promise<void>;
}

/** The entity classes the app hands in (tools that speak only SQL hand in none). */
export type Entities = NonNullable<DataSourceOptions['entities']>;

function baseOptions(
  entities: Entities,
): Pick<DataSourceOptions, 'entities' | 'migrations' | 'synchronize'> {
  return { entities, migrations: MIGRATIONS, synchronize: false };
}

/**
 * How long the database may hold a connection (docs/operations.md, "When things fail"). A
 * live server cancels a statement past `queryTimeoutMs` itself (lock waits included, so no
 * lock_timeout of its own); a frozen or partitioned one never answers, and a second later
 * the connection is dropped. Keepalive finds a peer that is gone (power lost, a firewall
 * dropping packets) on idle connections. A session idle in a transaction longer than any
 * outbound call made inside one (each has its own timeout, 10 minutes at most) is ended
 * by the server, which frees the locks of a Climate process frozen mid-transaction.
 * JIT compilation is off: Climate's statements are short, and a plan costed high on stale
 * statistics (a fleet-wide change before autovacuum's ANALYZE) spent 0.8 s compiling a
 * read that runs in milliseconds (docs/power.md).
 */
function sessionBounds(queryTimeoutMs: number): Record<string, unknown> {
  return {
    Client: boundedClient(queryTimeoutMs + 1000),
    statement_timeout: queryTimeoutMs,
    idle_in_transaction_session_timeout: 15 * 60_000,
    options: '-c jit=off',
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

/** Tells what a slow step is doing before it starts (a first start is long). */
export type Progress = (message: string) => void;

/** PostgreSQL when a URL is given; else embedded PGlite in `dataDir` (one session). */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> &
    Partial<Pick<Config, 'databaseConnectTimeoutMs' | 'databaseQueryTimeoutMs'>>,
  poolSize = 10,
  progress: Progress = () => undefined,
  entities: Entities = [],
): Promise<Database> {
  if (config.databaseUrl !== null) {
    const dataSource = new DataSource({
      type: 'postgres',
      url: config.databaseUrl,
      poolSize,
      // Bounds both a new connection and the wait for a free one: with the server down
      // or overloaded a request fails (503) instead of hanging.
      connectTimeoutMS: config.databaseConnectTimeoutMs ?? 5000,
      applicationName: 'climate',
      extra: sessionBounds(config.databaseQueryTimeoutMs ?? 10_000),
      ...baseOptions(entities),
    });
    await dataSource.initialize();
    return { dataSource, embedded: false, close: () => dataSource.destroy() };
  }
  mkdirSync(config.dataDir, { recursive: true });
  // PGlite has no lock of its own: two processes on one directory lose writes or worse.
  const lock = lockDataDir(config.dataDir);
  let pglite: PGlite | undefined;
  try {
    if (!existsSync(join(config.dataDir, 'PG_VERSION'))) {
      progress(
        `creating the embedded database in ${config.dataDir}: the first start takes ` +
          'ten to twenty seconds',
      );
    }
    pglite = await PGlite.create(config.dataDir, { extensions: { btree_gist } });
    const pg = createPgConfig(pglite);
    const dataSource = new DataSource({
      type: 'postgres',
      // One connection that never idles out: PGlite has exactly one session.
      extra: { connection: pg.connection, max: 1, idleTimeoutMillis: 0 },
      ...baseOptions(entities),
    });
    await dataSource.initialize();
    const opened = pglite;
    return {
      dataSource,
      embedded: true,
      close: async () => {
        try {
          await dataSource.destroy();
          await opened.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    await pglite?.close().catch(() => undefined);
    lock.release();
    throw error;
  }
}

/**
 * Runs `fn` with a migration executor under a session advisory lock, so replicas (and the
 * migrations command) never migrate at the same time.
 */
export async function withMigrationLock<T>(
  dataSource: DataSource,
  fn: (executor: MigrationExecutor) => Promise<T>,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  // A migration, and the wait for another replica's, may take longer than any request.
  const client = (await runner.connect()) as Partial<DeadlineClient>;
  const deadline = client.deadlineMs;
  if (deadline !== undefined) client.deadlineMs = 0;
  try {
    if (deadline !== undefined) await runner.query('SET statement_timeout = 0');
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    return await fn(executor);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    if (deadline !== undefined) {
      await runner.query('RESET statement_timeout').catch(() => undefined);
      client.deadlineMs = deadline;
    }
    await runner.release();
  }
}

/** Runs pending migrations; returns the names of those it applied. */
export async function migrate(
  dataSource: DataSource,
  progress: Progress = () => undefined,
): Promise<string[]> {
  const done = await withMigrationLock(dataSource, async (executor) => {
    const pending = await executor.getPendingMigrations();
    if (pending.length > 0) progress(`applying ${pending.length} database migration(s)`);
    return executor.executePendingMigrations();
  });
  return done.map((m) => m.name);
}
