import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { PowerService } from '../src/power/power.service.js';
import { BenchClient, fmt, hostLease } from './http.js';
import { type Figure, percentile, statements } from './stats.js';

const HOUR = 3_600_000;
/** How often the manager runs the plan (POWER_INTERVAL_MS's default). */
const INTERVAL_MS = 15_000;

/** One operation's times and statements, measured side by side with the others. */
class Series {
  readonly times: number[] = [];
  statements = 0;

  constructor(readonly label: string) {}

  async time<T>(work: () => Promise<T>): Promise<T> {
    const before = statements.count;
    const t0 = process.hrtime.bigint();
    const result = await work();
    this.times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    this.statements += statements.count - before;
    return result;
  }

  figure(base?: Series): Figure {
    const sorted = [...this.times].sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    const ratio =
      base === undefined
        ? ''
        : ` (${(
            p50 /
            percentile(
              [...base.times].sort((a, b) => a - b),
              50,
            )
          ).toFixed(1)}x create)`;
    return {
      label: this.label + ratio,
      runs: sorted.length,
      p50,
      p99: percentile(sorted, 99),
      statements: this.statements / Math.max(1, sorted.length),
    };
  }
}

/** A second Climate on the scenario's database with POWER_PLAN=on and its own clock. */
async function powerApp(url: string, clock: FakeClock): Promise<INestApplication> {
  const config = {
    ...loadConfig({
      DATABASE_URL: url,
      PLUGINS: 'physical:host,virtual:instance',
      LOG_LEVEL: 'error',
      POWER_PLAN: 'on',
    }),
    managerTimer: false,
  };
  const app = await buildApp(config, { clock, logger: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

/**
 * The power plan at this size (docs/power.md): its first run (every host planned), then,
 * with the fleet as the plan wants it (the hosts it wants off, off: set in the database
 * as after the plan has run a while), side by side in each round: a one-host create (the
 * bare create the ratios are to), the manager's power run after it, a run with only the
 * clock moved on (POWER_INTERVAL_MS), GET /v1/power-plan's first page, a filtered page,
 * and /readyz. The runs are in-process (no HTTP), the rest over HTTP on loopback.
 */
export async function measurePower(
  url: string,
  start: Date,
  budgetMs: number,
  rounds = 60,
): Promise<Figure[]> {
  const clock = new FakeClock(new Date(start.getTime() + HOUR));
  const app = await powerApp(url, clock);
  try {
    const ds = app.get(DataSource);
    const power = app.get(PowerService);
    const address = (app.getHttpServer() as { address(): AddressInfo }).address();
    const http = new BenchClient(`http://127.0.0.1:${address.port}`);
    // Every host on for two hours already, so the first run plans the idle ones off.
    await ds.query(
      `INSERT INTO host_power (host_id, changed_at) SELECT id, $1 FROM hosts
       ON CONFLICT (host_id) DO UPDATE SET changed_at = $1`,
      [new Date(clock.now().getTime() - 2 * HOUR)],
    );
    const first = new Series('power plan run, first (every host planned)');
    await first.time(() => power.run());
    console.log(`  ${first.label}: ${first.times[0].toFixed(0)} ms`);
    const off = await ds.query<{ n: number }[]>(
      `WITH off AS (
         UPDATE host_power hp SET state = 'off', changed_at = $1 FROM power_plan pp
          WHERE pp.host_id = hp.host_id AND pp.act = 'off' RETURNING hp.host_id)
       , logged AS (INSERT INTO power_log (host_id, state, at) SELECT host_id, 'off', $1 FROM off)
       SELECT count(*)::int AS n FROM off`,
      [new Date(clock.now().getTime() - HOUR)],
    );
    // The plan sees them (every host switched: as many as the first run) and moves on.
    await power.run();
    clock.advance(INTERVAL_MS);
    await power.run();
    // The statistics of a plan that has run a while, as autovacuum would have gathered them
    // long before (the seed's VACUUM ran before these tables held anything): without them
    // the planner takes every host for a candidate and reads the power records by seq scan
    // (and, at 100,000 hosts, JIT-compiles the candidates' read: 0.8 s).
    await ds.query(`ANALYZE host_power, power_log, power_plan, power_windows, power_off_spans`);
    console.log(`  ${off[0].n} hosts off, as the plan wants them`);

    const create = new Series('lease create, physical:host min=max=1, power plan on');
    const afterCreate = new Series('power plan run, a lease created since');
    const idle = new Series('power plan run, nothing changed but the clock');
    const page = new Series('GET /v1/power-plan (first page, 100 hosts)');
    const filtered = new Series('GET /v1/power-plan?to=on&end=+1d');
    const readyz = new Series('GET /readyz');
    const started = Date.now();
    for (let i = 0; i < rounds; i++) {
      if (i >= 3 && Date.now() - started > budgetMs * 4) break;
      await create.time(() => http.post('/v1/leases', hostLease(start, i + 200_000, 1), [201]));
      clock.advance(INTERVAL_MS);
      await afterCreate.time(() => power.run());
      clock.advance(INTERVAL_MS);
      await idle.time(() => power.run());
      await page.time(() => http.get('/v1/power-plan'));
      const end = encodeURIComponent(fmt(new Date(clock.now().getTime() + 24 * HOUR)));
      await filtered.time(() => http.get(`/v1/power-plan?to=on&end=${end}`));
      await readyz.time(() => http.get('/readyz'));
    }
    const figures = [
      first.figure(create),
      create.figure(),
      ...[afterCreate, idle, page, filtered, readyz].map((s) => s.figure(create)),
    ];
    for (const f of figures) {
      console.log(
        `  ${f.label.padEnd(60)} n=${String(f.runs).padStart(4)}  p50 ${f.p50.toFixed(2).padStart(8)} ms` +
          `  p99 ${f.p99.toFixed(2).padStart(8)} ms  ${f.statements.toFixed(1).padStart(6)} stmts/req`,
      );
    }
    return figures;
  } finally {
    await app.close();
  }
}
