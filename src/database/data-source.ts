import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { DataSource, DataSourceOptions, MigrationExecutor } from 'typeorm';
import type { Config } from '../config/config.js';
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

/** Tells what a slow step is doing before it starts (a first start is long). */
export type Progress = (message: string) => void;

/** PostgreSQL when a URL is given; else embedded PGlite in `dataDir` (one session). */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> &
    Partial<Pick<Config, 'databaseConnectTimeoutMs'>>,
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
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    return await fn(executor);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
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
