/**
 * `npm run bench`: Climate over a sweep of fleet sizes (BENCH_HOSTS, a comma list,
 * default 1000,10000) and allocation shapes (BENCH_SHAPE=today|blazar|both, default
 * both), each on its own scratch PostgreSQL database (BENCH_DATABASE_URL, default the
 * local test server). Prints p50/p99 latency over HTTP on loopback and SQL statements
 * per request of the hot paths, creates/s with 64 clients and the CPU per create of
 * Node and PostgreSQL, then one table of everything with the machine on top.
 * Then the start and end storm (storm.ts): BENCH_STORM_LEASES host leases and as many
 * instance leases (default 1000; 0 skips it) with 1 and 2 managers (BENCH_STORM_MANAGERS);
 * BENCH_STORM_ONLY=1 runs the storm alone. Last the packing row (packing.ts), with
 * HOST_WEIGHTS=gpu=10 and without weights (BENCH_PACKING=0 skips it). BENCH_OUT=<file> also
 * writes the figures as JSON, for bench/summary.ts. Each scenario ends with the power
 * plan's rows (power.ts; BENCH_POWER=0 skips them). BENCH_KEEP_DATABASE=1 keeps each
 * scenario's database (its name is printed), to EXPLAIN on it afterwards.
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { describeMachine } from './machine.js';
import { formatTable } from './report.js';
import { runScenario, ScenarioResult, withAdmin } from './scenario.js';
import type { SeedShape } from './seed.js';
import { statements } from './stats.js';
import { formatStorm, runStorm, type StormFigure } from './storm.js';
import { formatPacking, runPacking } from './packing.js';

const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SIZES = (process.env.BENCH_HOSTS ?? '1000,10000').split(',').map((s) => Number(s.trim()));
const PER_HOST = Number(process.env.BENCH_ALLOCATIONS_PER_HOST ?? 10);
const SHAPE = process.env.BENCH_SHAPE ?? 'both';
/** At most this long on one operation's runs (at least 3 runs are made). */
const BUDGET_MS = Number(process.env.BENCH_OPERATION_SECONDS ?? 5) * 1000;
const CLIENTS = 64;
const THROUGHPUT_SECONDS = 10;
const STORM_LEASES = Number(process.env.BENCH_STORM_LEASES ?? 1000);
const STORM_MANAGERS = (process.env.BENCH_STORM_MANAGERS ?? '1,2').split(',').map(Number);
const STORM_ONLY = process.env.BENCH_STORM_ONLY === '1';
const PACKING = process.env.BENCH_PACKING !== '0';
const OUT = process.env.BENCH_OUT;

function shapes(): SeedShape[] {
  if (SHAPE === 'both') return ['today', 'blazar'];
  if (SHAPE === 'today' || SHAPE === 'blazar') return [SHAPE];
  throw new Error(`BENCH_SHAPE must be today, blazar or both, not ${SHAPE}`);
}

async function main(): Promise<void> {
  if (SIZES.some((n) => !Number.isInteger(n) || n < 50)) {
    throw new Error(`BENCH_HOSTS must be a comma list of host counts of at least 50`);
  }
  const version = await withAdmin(SERVER, async (c) => {
    const r = await c.query<{ v: string }>(`SELECT split_part(version(), ' on ', 1) AS v`);
    return r.rows[0].v;
  });
  const machine = describeMachine(version);
  console.log(`machine: ${machine}`);
  statements.install();
  const results: ScenarioResult[] = [];
  const t0 = Date.now();
  for (const hosts of STORM_ONLY ? [] : SIZES) {
    for (const shape of shapes()) {
      results.push(
        await runScenario({
          server: SERVER,
          hosts,
          perHost: PER_HOST,
          shape,
          budgetMs: BUDGET_MS,
          clients: CLIENTS,
          throughputSeconds: THROUGHPUT_SECONDS,
        }),
      );
    }
  }
  console.log(`\nmachine: ${machine}`);
  console.log(
    `BENCH_HOSTS=${SIZES.join(',')} BENCH_SHAPE=${SHAPE}, ${PER_HOST} allocations per host, ` +
      `${((Date.now() - t0) / 1000).toFixed(0)} s in all\n`,
  );
  if (results.length > 0) console.log(formatTable(results));
  let storm: StormFigure[] = [];
  if (STORM_LEASES > 0) {
    console.log(`\n== storm: ${STORM_LEASES} host and ${STORM_LEASES} instance leases`);
    storm = await runStorm({
      server: SERVER,
      hostLeases: STORM_LEASES,
      instanceLeases: STORM_LEASES,
      managers: STORM_MANAGERS,
    });
    console.log(`\n${formatStorm(storm)}`);
  }
  // The figures as JSON for `bench/summary.ts`, which takes the median of several runs.
  if (OUT) writeFileSync(OUT, JSON.stringify({ machine, at: new Date(), results, storm }));
  if (!PACKING) return;
  const packing = [];
  for (const weights of ['gpu=10', '']) packing.push(await runPacking(SERVER, 100, 6, weights));
  console.log(`\n${formatPacking(packing)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
