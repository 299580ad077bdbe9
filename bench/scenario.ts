import 'reflect-metadata';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { MIGRATIONS } from '../src/database/migration-list.js';
import { BenchClient } from './http.js';
import { measureOperations } from './operations.js';
import { measurePower } from './power.js';
import { seed, SeedShape } from './seed.js';
import type { Figure } from './stats.js';
import { claimThroughput, createThroughput, Throughput } from './throughput.js';

export interface ScenarioOptions {
  server: string;
  hosts: number;
  perHost: number;
  shape: SeedShape;
  /** Time spent at most on one operation's runs. */
  budgetMs: number;
  clients: number;
  throughputSeconds: number;
}

export interface ScenarioResult {
  hosts: number;
  shape: SeedShape;
  seedSeconds: number;
  figures: Figure[];
  throughput: Throughput;
  claimsPerSecond: number;
}

export async function withAdmin<T>(server: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: server });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * One size and shape on its own scratch database, dropped afterwards even on failure
 * (unless BENCH_KEEP_DATABASE=1).
 */
export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const name = `climate_bench_${randomBytes(4).toString('hex')}`;
  const kept = process.env.BENCH_SEED_CACHE === '1' ? await seededTemplate(o) : undefined;
  const from = kept ? ` TEMPLATE ${kept.template}` : '';
  await withAdmin(o.server, (c) => c.query(`CREATE DATABASE ${name}${from}`));
  try {
    return await onDatabase(o, name, kept?.seedSeconds);
  } finally {
    // BENCH_KEEP_DATABASE=1 keeps it, to EXPLAIN a statement on the same data afterwards.
    if (process.env.BENCH_KEEP_DATABASE === '1') console.log(`  kept database ${name}`);
    else await withAdmin(o.server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

/**
 * BENCH_SEED_CACHE=1: the seeded database is kept as a template, named by its size, shape
 * and the seed's code, and each run measures a copy of it (a 100,000-host seed takes
 * minutes; a copy seconds). The copy is brought to the current schema by the app's own
 * start, as an upgrade would; a template whose migrations are not a prefix of today's is
 * seeded again. The copy starts with nothing of it in PostgreSQL's buffers, so its `cold`
 * row is colder than a fresh seed's. Drop the `climate_seed_*` databases to free the disk.
 */
async function seededTemplate(
  o: ScenarioOptions,
): Promise<{ template: string; seedSeconds: number }> {
  const code = readFileSync(join(__dirname, 'seed.js'), 'utf8');
  const key = createHash('sha256').update(code).digest('hex').slice(0, 10);
  const template = `climate_seed_${o.hosts}_${o.shape}_${o.perHost}_${key}`;
  const schema = MIGRATIONS.map((m) => m.name);
  const kept = await withAdmin(o.server, async (c) => {
    const r = await c.query<{ comment: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1`,
      [template],
    );
    return r.rows[0]?.comment ? (JSON.parse(r.rows[0].comment) as SeedComment) : undefined;
  });
  if (kept && kept.migrations.every((name, i) => schema[i] === name)) {
    return { template, seedSeconds: kept.seconds };
  }
  await withAdmin(o.server, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${template}`);
  });
  const { app, ds } = await startApp(o, template, new FakeClock(START));
  let seconds: number;
  try {
    seconds = await seedDatabase(o, ds);
  } finally {
    await app.close();
  }
  // The comment marks the seed finished: a half-seeded template is seeded again.
  const comment: SeedComment = { seconds, migrations: schema };
  await withAdmin(o.server, (c) =>
    c.query(`COMMENT ON DATABASE ${template} IS '${JSON.stringify(comment)}'`),
  );
  return { template, seedSeconds: seconds };
}

interface SeedComment {
  seconds: number;
  migrations: string[];
}

const START = new Date('2035-01-01T00:00:00Z');

async function startApp(o: ScenarioOptions, name: string, clock: FakeClock) {
  const url = new URL(o.server);
  url.pathname = `/${name}`;
  const config = {
    ...loadConfig({
      DATABASE_URL: url.toString(),
      PLUGINS: 'physical:host,virtual:instance',
      LOG_LEVEL: 'error',
      // The seed's bulk statements (host_busy of every host) outlast the default 10 s at
      // 100,000 hosts on a loaded machine; no request measured comes near either bound.
      DATABASE_QUERY_TIMEOUT_MS: '600000',
    }),
    managerTimer: false,
  };
  const app = await buildApp(config, { clock, logger: false });
  return { app, ds: app.get(DataSource), url };
}

/** Seeds the fleet and its allocations; the seconds it took. */
async function seedDatabase(o: ScenarioOptions, ds: DataSource): Promise<number> {
  const t0 = Date.now();
  console.log(
    `\n== ${o.hosts} hosts, ${o.shape} shape: seeding ${o.hosts * o.perHost} allocations…`,
  );
  const report = (done: number, total: number) => {
    if (total <= 10_000 || done % 10_000 === 0 || done === total) {
      const seconds = ((Date.now() - t0) / 1000).toFixed(1);
      console.log(
        `  seeded ${done} of ${total} hosts (${Math.round((100 * done) / total)}%), ${seconds} s`,
      );
    }
  };
  await seed(ds, o.hosts, o.perHost, START, report, o.shape);
  return (Date.now() - t0) / 1000;
}

async function onDatabase(
  o: ScenarioOptions,
  name: string,
  copiedSeed: number | undefined,
): Promise<ScenarioResult> {
  const start = START;
  const clock = new FakeClock(start);
  const { app, ds, url } = await startApp(o, name, clock);
  try {
    await app.listen(0, '127.0.0.1');
    const server = app.getHttpServer() as { address(): AddressInfo };
    const http = new BenchClient(`http://127.0.0.1:${server.address().port}`);
    if (copiedSeed !== undefined) {
      console.log(`\n== ${o.hosts} hosts, ${o.shape} shape: a copy of the kept seed`);
    }
    const seedSeconds = copiedSeed ?? (await seedDatabase(o, ds));
    const figures = await measureOperations(http, ds, start, o.hosts, o.budgetMs);
    const throughput = await createThroughput(
      http,
      ds,
      start,
      o.clients,
      o.throughputSeconds,
      `${o.hosts}-${o.shape}`,
    );
    const claimsPerSecond = await claimThroughput(http, app, clock);
    // Last: it switches hosts off (BENCH_POWER=0 skips it).
    if (process.env.BENCH_POWER !== '0') {
      console.log(`  power plan (POWER_PLAN=on, a second app on this database):`);
      figures.push(...(await measurePower(url.toString(), start, o.budgetMs)));
    }
    return { hosts: o.hosts, shape: o.shape, seedSeconds, figures, throughput, claimsPerSecond };
  } finally {
    await app.close();
  }
}
