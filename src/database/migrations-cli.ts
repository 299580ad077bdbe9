import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import { ConfigError, loadConfig } from '../config/config.js';
import { explainStartupError } from './startup-error.js';
import { migrate, openDatabase, withMigrationLock } from './data-source.js';

/** A migration's name and whether this database has it. */
export interface MigrationState {
  name: string;
  applied: boolean;
}

export type MigrationCommand = 'show' | 'run' | 'revert';

/** Every migration the code knows, oldest first, and whether it has run here. */
export async function migrationStates(dataSource: DataSource): Promise<MigrationState[]> {
  return withMigrationLock(dataSource, async (executor) => {
    const applied = new Set((await executor.getExecutedMigrations()).map((m) => m.name));
    return dataSource.migrations.map((m) => ({
      name: m.name ?? m.constructor.name,
      applied: applied.has(m.name ?? m.constructor.name),
    }));
  });
}

/** Undoes the newest applied migration (its `down`); null when none is applied. */
export async function revertLast(dataSource: DataSource): Promise<string | null> {
  const before = await migrationStates(dataSource);
  const newest = before.filter((m) => m.applied).pop();
  if (newest === undefined) return null;
  await withMigrationLock(dataSource, (executor) => executor.undoLastMigration());
  return newest.name;
}

/**
 * `show`, `run` or `revert` against the database the environment names (DATABASE_URL,
 * or the embedded one in DATA_DIR, which must not be open in a running Climate).
 */
export async function runMigrationCommand(
  command: MigrationCommand,
  env: Record<string, string | undefined>,
  print: (line: string) => void,
): Promise<void> {
  const config = loadConfig(env);
  const database = await openDatabase(config, 1);
  try {
    if (command === 'run') {
      const done = await migrate(database.dataSource);
      print(done.length === 0 ? 'nothing to apply' : `applied ${done.join(', ')}`);
    } else if (command === 'revert') {
      const undone = await revertLast(database.dataSource);
      print(undone === null ? 'nothing to revert' : `reverted ${undone}`);
    } else {
      for (const m of await migrationStates(database.dataSource)) {
        print(`${m.applied ? '[X]' : '[ ]'} ${m.name}`);
      }
    }
  } finally {
    await database.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const command = argv[0] as MigrationCommand;
  if (!['show', 'run', 'revert'].includes(command)) {
    process.stderr.write('usage: migrations-cli show | run | revert\n');
    process.exit(2);
  }
  try {
    await runMigrationCommand(command, process.env, (line) => process.stdout.write(`${line}\n`));
  } catch (error) {
    const config = error instanceof ConfigError ? null : loadConfig(process.env);
    process.stderr.write(`${explainStartupError(error, config)}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv.slice(2));
