import 'reflect-metadata';
import { type Config, ConfigError, loadConfig } from '../config/config.js';
import { buildApp } from '../app.js';
import { adoptComputeState, describeAdoption } from './adopt.js';
import { migrate, openDatabase } from '../database/data-source.js';
import type { DataSource } from 'typeorm';
import { explainStartupError } from '../database/startup-error.js';
import { connectSource, readSource } from './blazar-source.js';
import { ImportRefused, planImport, runImport, verifyImport } from './import-blazar.js';

export interface CliOptions {
  from: string;
  dryRun: boolean;
  verify: boolean;
  skipTypes: string[];
  /** Adopt Nova's state (after the import), instead of importing. */
  adopt?: boolean;
}

const USAGE =
  'usage: import:blazar --from mysql://user:pass@host:3306/blazar [--dry-run] [--verify] [--skip-type <type>]...\n' +
  '       import:blazar --adopt [--dry-run]   (with COMPUTE_DRIVER=nova, after the import)';

export function parseArgs(argv: string[]): CliOptions | string {
  const options: CliOptions = { from: '', dryRun: false, verify: false, skipTypes: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--dry-run') options.dryRun = true;
    else if (arg === '--adopt') options.adopt = true;
    else if (arg === '--verify') options.verify = true;
    else if (arg === '--from' && argv[i + 1] !== undefined) options.from = argv[++i];
    else if (arg === '--skip-type' && argv[i + 1] !== undefined) options.skipTypes.push(argv[++i]);
    else return `unknown argument ${arg}\n${USAGE}`;
  }
  if (options.adopt) {
    if (options.from !== '' || options.verify || options.skipTypes.length > 0) {
      return `--adopt takes only --dry-run\n${USAGE}`;
    }
    return options;
  }
  if (!/^mysql:\/\//.test(options.from)) return `--from must be a mysql:// URL\n${USAGE}`;
  return options;
}

/** Migrations not applied yet, read without writing (TypeORM's own check makes its table). */
async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const all = dataSource.migrations.map((m) => m.name ?? m.constructor.name);
  const [{ has }] = await dataSource.query<{ has: boolean }[]>(
    `SELECT to_regclass('migrations') IS NOT NULL AS has`,
  );
  if (!has) return all;
  const done = await dataSource.query<{ name: string }[]>('SELECT name FROM migrations');
  return all.filter((name) => !done.some((d) => d.name === name));
}

/** The source without its password, for messages. */
function shown(url: string): string {
  const u = new URL(url);
  u.password = u.password === '' ? '' : '***';
  return u.toString();
}

/**
 * Runs the import (or the dry run, or the verification) against the database the
 * environment names; returns the exit status: 0 done, 1 refused or different.
 */
export async function runCli(
  options: CliOptions,
  env: Record<string, string | undefined>,
  print: (line: string) => void,
): Promise<number> {
  const config = loadConfig(env);
  if (options.adopt) return runAdopt(config, options.dryRun, print);
  const source = await connectSource(options.from);
  try {
    print(`reading ${shown(options.from)}`);
    // The source's rows are dropped once mapped: only the plan is kept (memory).
    const plan = planImport(await readSource(source, print), config, {
      ...options,
      dryRun: true,
    });
    print(`mapped ${plan.hosts.length} host(s) and ${plan.leases.length} lease(s)`);
    // Problems of the source alone are told before Climate's database is even opened.
    if (plan.problems.length > 0 && !options.verify) throw new ImportRefused(plan.problems);
    // One long transaction of large batches: the request bound (DATABASE_QUERY_TIMEOUT_MS)
    // is for API requests, not for an import an operator runs and watches.
    const database = await openDatabase({ ...config, databaseQueryTimeoutMs: 3_600_000 }, 2, print);
    try {
      // A dry run writes nothing, not even Climate's schema: an empty database is checked
      // as one; pending migrations on a used one must be run first.
      const pending = await pendingMigrations(database.dataSource);
      if (options.verify) {
        if (pending.length > 0) {
          print(
            `verify: ${pending.length} Climate migration(s) not applied: nothing was imported here`,
          );
          return 1;
        }
        const differences = await verifyImport(database.dataSource, plan);
        for (const d of differences) print(`DIFFERENT ${d}`);
        print(
          differences.length === 0
            ? 'verify: Climate holds what Blazar held'
            : `verify: ${differences.length} difference(s)`,
        );
        return differences.length === 0 ? 0 : 1;
      }
      let emptyTarget = false;
      if (options.dryRun && pending.length > 0) {
        emptyTarget = pending.length === database.dataSource.migrations.length;
        if (!emptyTarget) {
          print(
            `${pending.length} Climate migration(s) pending: run \`npm run migrations run\` first`,
          );
          return 1;
        }
        print('Climate database is empty (its migrations are applied by the import itself)');
      } else {
        const applied = await migrate(database.dataSource, print);
        if (applied.length > 0) print(`applied ${applied.length} Climate migration(s)`);
      }
      const report = await runImport(
        database.dataSource,
        plan,
        config,
        { ...options, emptyTarget },
        print,
      );
      for (const note of report.notes) print(`note: ${note}`);
      const l = report.leases;
      print(
        `${options.dryRun ? 'would import' : 'imported'}: ${report.hosts.imported} host(s), ` +
          `${report.properties.imported} propert(ies), ${l.imported} lease(s) ` +
          `${JSON.stringify(l.byStatus)}, ${report.reservations} reservation(s), ` +
          `${report.hostAllocations} host allocation(s), ${report.instanceAllocations} instance allocation(s), ` +
          `${report.events} event(s); already in Climate: ${report.hosts.present} host(s), ${l.present} lease(s)`,
      );
      const f = report.floatingIps;
      print(
        `floating IPs: ${f.imported} address(es) ${options.dryRun ? 'to import' : 'imported'}, ` +
          `${f.present} already in Climate; ${report.floatingIpAllocations} allocation(s)`,
      );
      if (options.dryRun) print('dry run: nothing was written');
      else if (config.computeDriver === 'nova') {
        print(
          "next: adopt Nova's state (npm run import:blazar -- --adopt --dry-run, then --adopt)",
        );
      }
      return 0;
    } finally {
      await database.close();
    }
  } catch (error) {
    if (error instanceof ImportRefused) {
      print(error.message);
      return 1;
    }
    throw error;
  } finally {
    await source.end();
  }
}

/**
 * Adoption runs Climate itself (its pools, plugins and heal), quiet: no listener, no
 * timer, no HTTP, against the database and Nova the environment names.
 */
async function runAdopt(
  config: Config,
  dryRun: boolean,
  print: (line: string) => void,
): Promise<number> {
  if (config.computeDriver !== 'nova') {
    print(
      'adopt: COMPUTE_DRIVER is not nova: Climate keeps no state in a compute service to adopt',
    );
    return 1;
  }
  const app = await buildApp(
    {
      ...config,
      managerTimer: false,
      novaNotify: { ...config.novaNotify, url: null },
      databaseQueryTimeoutMs: 3_600_000,
    },
    { logger: false },
  );
  try {
    await app.init();
    const report = await adoptComputeState(
      app,
      { freepoolName: config.freepoolName, azPrefix: config.azPrefix },
      { dryRun },
    );
    if (report === null) return 1;
    for (const line of describeAdoption(report, config.freepoolName, dryRun)) print(line);
    return report.remaining.length === 0 || dryRun ? 0 : 1;
  } finally {
    await app.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const options = parseArgs(argv);
  if (typeof options === 'string') {
    process.stderr.write(`${options}\n`);
    process.exit(2);
  }
  try {
    process.exitCode = await runCli(options, process.env, (line) =>
      process.stdout.write(`${line}\n`),
    );
  } catch (error) {
    const config = error instanceof ConfigError ? null : loadConfig(process.env);
    process.stderr.write(`${explainStartupError(error, config)}\n`);
    process.exit(1);
  }
}

if (require.main === module) void main(process.argv.slice(2));
