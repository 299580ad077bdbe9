/**
 * The start and end storm: `hostLeases` one-host leases and `instanceLeases` one-slot
 * instance leases all start in the same minute, and later all end in it, run by one and
 * then by two manager processes (storm-manager.ts) on copies of one prepared database.
 * Reports each lease's lag (event done minus its time) and the storm's length.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { BenchClient, fmt, REQUEST_TIMEOUT_MS } from './http.js';
import { withAdmin } from './scenario.js';
import { seed } from './seed.js';
import { percentile } from './stats.js';
import type { StormOrder } from './storm-manager.js';
import { PhaseMeter, printStatements, resetStatements, type PhaseCost } from './storm-meter.js';

export interface StormFigure {
  managers: number;
  phase: 'start' | 'end';
  leases: number;
  failed: number;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
  cost: PhaseCost;
}

export interface StormOptions {
  server: string;
  hostLeases: number;
  instanceLeases: number;
  /** Runs the storm once with each of these counts of manager processes. */
  managers: number[];
}

const HOUR = 3600_000;
const T0 = new Date('2035-01-01T00:00:00Z');
export const STORM = new Date(T0.getTime() + HOUR);
export const LENGTH = 3 * HOUR;
const DEADLINE_MS = 600_000;

export function dbUrl(server: string, name: string): string {
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function runStorm(o: StormOptions): Promise<StormFigure[]> {
  const base = `climate_storm_${randomBytes(4).toString('hex')}`;
  await withAdmin(o.server, (c) => c.query(`CREATE DATABASE ${base}`));
  try {
    await prepare(o, dbUrl(o.server, base));
    const figures: StormFigure[] = [];
    for (const managers of o.managers) {
      const copy = `${base}_${managers}`;
      await withAdmin(o.server, (c) => c.query(`CREATE DATABASE ${copy} TEMPLATE ${base}`));
      try {
        figures.push(...(await storm(dbUrl(o.server, copy), managers)));
      } finally {
        await withAdmin(o.server, (c) => c.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`));
      }
    }
    return figures;
  } finally {
    await withAdmin(o.server, (c) => c.query(`DROP DATABASE IF EXISTS ${base} WITH (FORCE)`));
  }
}

/** Hosts for every host lease and room for every slot, then the leases, made over HTTP. */
export async function prepare(
  o: Pick<StormOptions, 'hostLeases' | 'instanceLeases'>,
  url: string,
): Promise<void> {
  const config = {
    ...loadConfig({
      DATABASE_URL: url,
      PLUGINS: 'physical:host,virtual:instance',
      LOG_LEVEL: 'error',
      MINUTES_BEFORE_END_LEASE: '0',
    }),
    managerTimer: false,
  };
  const app = await buildApp(config, { clock: new FakeClock(T0), logger: false });
  try {
    await app.listen(0, '127.0.0.1');
    const server = app.getHttpServer() as { address(): AddressInfo };
    const http = new BenchClient(`http://127.0.0.1:${server.address().port}`);
    // Seeded hosts have 16 or 32 vCPUs: one in eight is plenty for one-vCPU slots.
    const hosts = o.hostLeases + Math.ceil(o.instanceLeases / 8) + 10;
    await seed(app.get(DataSource), hosts, 0, T0);
    const t0 = Date.now();
    const bodies = [
      ...Array.from({ length: o.hostLeases }, (_, i) => lease(`storm-host-${i}`, hostPart())),
      ...Array.from({ length: o.instanceLeases }, (_, i) => lease(`storm-vm-${i}`, slotPart())),
    ];
    let next = 0;
    let conflicts = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < bodies.length) {
          const body = bodies[next++];
          // A 409 is a create that lost a race for a host: the client's to retry.
          while ((await create(http, body)) === 409) conflicts++;
        }
      }),
    );
    console.log(
      `  storm: ${bodies.length} leases made in ${((Date.now() - t0) / 1000).toFixed(1)} s ` +
        `by 8 clients (${conflicts} answered 409 and were sent again)`,
    );
  } finally {
    await app.close();
  }
}

/** Creates a lease; logs why when Climate answers 409. */
async function create(http: BenchClient, body: unknown): Promise<number> {
  const res = await fetch(`${http.base}/v1/leases`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status === 409) console.log(`  storm: a create answered 409: ${text}`);
  else if (res.status !== 201) throw new Error(`create: ${res.status} ${text}`);
  return res.status;
}

function lease(name: string, part: Record<string, unknown>) {
  return {
    name,
    start_date: fmt(STORM),
    end_date: fmt(new Date(STORM.getTime() + LENGTH)),
    reservations: [part],
  };
}

const hostPart = () => ({
  resource_type: 'physical:host',
  min: 1,
  max: 1,
  hypervisor_properties: '',
  resource_properties: '',
});

const slotPart = () => ({
  resource_type: 'virtual:instance',
  vcpus: 1,
  memory_mb: 1024,
  disk_gb: 10,
  amount: 1,
  affinity: null,
  resource_properties: '',
});

/** Runs the start storm and then the end storm with `count` manager processes. */
async function storm(url: string, count: number): Promise<StormFigure[]> {
  const children = Array.from({ length: count }, () =>
    fork(join(__dirname, 'storm-manager.js'), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  try {
    await Promise.all(children.map((child) => ready(child, url)));
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      const start = await phase(db, children, url, 'start_lease', STORM);
      const end = await phase(db, children, url, 'end_lease', new Date(STORM.getTime() + LENGTH));
      return [
        { managers: count, phase: 'start', ...start },
        { managers: count, phase: 'end', ...end },
      ];
    } finally {
      await db.end();
    }
  } finally {
    for (const child of children) child.kill();
  }
}

function ready(child: ChildProcess, url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`a storm manager exited with ${code}`)));
    // Parked an hour before the storm until every manager is up.
    const order: StormOrder = { url, at: T0.toISOString(), real: Date.now() };
    child.send(order);
  });
}

/** Moves every manager's clock to `at` at once and waits for every `type` event. */
async function phase(
  db: Client,
  children: ChildProcess[],
  url: string,
  type: string,
  at: Date,
): Promise<Omit<StormFigure, 'managers' | 'phase'>> {
  await resetStatements(db);
  const meter = await PhaseMeter.start(db, children);
  const real = Date.now();
  for (const child of children) child.send({ url, at: at.toISOString(), real });
  const deadline = real + DEADLINE_MS;
  let open = Infinity;
  while (open > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    const r = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE event_type = $1 AND status NOT IN ('DONE', 'ERROR')`,
      [type],
    );
    open = Number(r.rows[0].n);
    await meter.sample(db);
  }
  const seconds = (Date.now() - real) / 1000;
  const cost = await meter.stop(db, children);
  const rows = await db.query<{ lag: number; status: string }>(
    `SELECT extract(epoch FROM updated_at - time)::float8 AS lag, status FROM events
      WHERE event_type = $1`,
    [type],
  );
  await printStatements(db, `${children.length} manager(s), ${type}`, rows.rows.length);
  const lags = rows.rows
    .filter((r) => r.status === 'DONE')
    .map((r) => Number(r.lag))
    .sort((a, b) => a - b);
  return {
    leases: rows.rows.length,
    failed: rows.rows.length - lags.length,
    seconds,
    p50: percentile(lags, 50),
    p99: percentile(lags, 99),
    max: lags[lags.length - 1] ?? NaN,
    cost,
  };
}

export function formatStorm(figures: StormFigure[]): string {
  const lines = [
    '| managers | phase | leases | failed | all done s | lag p50 / p99 / max s | ' +
      'statements / event | Node CPU ms / event | PostgreSQL CPU ms / event | ' +
      'backends waiting on a lock (mean of samples) | load |',
    '|--:|---|--:|--:|--:|---|--:|--:|--:|--:|--:|',
  ];
  const waits: string[] = [];
  for (const f of figures) {
    const { cost } = f;
    const per = (x: number) => (x / f.leases).toFixed(1);
    const mean = (keys: string[]) =>
      (keys.reduce((a, k) => a + cost.waits[k], 0) / Math.max(1, cost.samples)).toFixed(2);
    const keys = Object.keys(cost.waits).sort((a, b) => cost.waits[b] - cost.waits[a]);
    lines.push(
      `| ${f.managers} | ${f.phase} | ${f.leases} | ${f.failed} | ${f.seconds.toFixed(1)} | ` +
        `${f.p50.toFixed(1)} / ${f.p99.toFixed(1)} / ${f.max.toFixed(1)} | ` +
        `${per(cost.statements)} | ${per(cost.nodeMs)} | ${per(cost.postgresMs)} | ` +
        `${mean(keys.filter((k) => k.startsWith('Lock:')))} | ${cost.load.toFixed(1)} |`,
    );
    const top = keys.slice(0, 6).map((k) => `${k} ${mean([k])}`);
    waits.push(`  ${f.managers} manager(s), ${f.phase}: ${top.join(', ') || 'none'}`);
  }
  return [...lines, '', 'backends waiting, mean per sample, by wait event:', ...waits].join('\n');
}
