import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { btree_gist } from '@electric-sql/pglite/contrib/btree_gist';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { DataSource, DataSourceOptions, MigrationExecutor } from 'typeorm';
import type { Config } from '../config/config.js';
import { ENTITIES, MIGRATIONS } from './entities.js';

/** Any number; all replicas agree on it so migrations run once. */
const MIGRATION_LOCK = 7_316_001;

export interface Database {
  dataSource: DataSource;
  embedded: boolean;
  close(): Promise<void>;
}

function baseOptions(): Pick<DataSourceOptions, 'entities' | 'migrations' | 'synchronize'> {
  return { entities: ENTITIES, migrations: MIGRATIONS, synchronize: false };
}

/** PostgreSQL when a URL is given; else embedded PGlite in `dataDir` (one session). */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  poolSize = 10,
): Promise<Database> {
  if (config.databaseUrl !== null) {
    const dataSource = new DataSource({
      type: 'postgres',
      url: config.databaseUrl,
      poolSize,
      applicationName: 'climate',
      ...baseOptions(),
    });
    await dataSource.initialize();
    return { dataSource, embedded: false, close: () => dataSource.destroy() };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const pglite = await PGlite.create(config.dataDir, { extensions: { btree_gist } });
  const pg = createPgConfig(pglite);
  const dataSource = new DataSource({
    type: 'postgres',
    // One connection that never idles out: PGlite has exactly one session.
    extra: { connection: pg.connection, max: 1, idleTimeoutMillis: 0 },
    ...baseOptions(),
  });
  await dataSource.initialize();
  return {
    dataSource,
    embedded: true,
    close: async () => {
      await dataSource.destroy();
      await pglite.close();
    },
  };
}

/** Runs pending migrations under a session advisory lock, so replicas never race. */
export async function migrate(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    const done = await executor.executePendingMigrations();
    return done.map((m) => m.name);
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await runner.release();
  }
}
