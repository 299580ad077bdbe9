import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
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
  await withAdmin(o.server, (c) => c.query(`CREATE DATABASE ${name}`));
  try {
    return await onDatabase(o, name);
  } finally {
    // BENCH_KEEP_DATABASE=1 keeps it, to EXPLAIN a statement on the same data afterwards.
    if (process.env.BENCH_KEEP_DATABASE === '1') console.log(`  kept database ${name}`);
    else await withAdmin(o.server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

async function onDatabase(o: ScenarioOptions, name: string): Promise<ScenarioResult> {
  const url = new URL(o.server);
  url.pathname = `/${name}`;
  const start = new Date('2035-01-01T00:00:00Z');
  const clock = new FakeClock(start);
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
  try {
    await app.listen(0, '127.0.0.1');
    const server = app.getHttpServer() as { address(): AddressInfo };
    const http = new BenchClient(`http://127.0.0.1:${server.address().port}`);
    const ds = app.get(DataSource);
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
    await seed(ds, o.hosts, o.perHost, start, report, o.shape);
    const seedSeconds = (Date.now() - t0) / 1000;
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
