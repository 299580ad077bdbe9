/**
 * `node dist-bench/bench/event-profile.js`: what one lease event costs, by kind (the start
 * and the end of a one-host lease and of a one-slot instance lease), the events run one at
 * a time after the storm's leases are made (BENCH_PROFILE_LEASES of each, default 100):
 * statements sent (each a round trip), Node CPU, and the CPU of the database's backends
 * (utime + stime from /proc, the server being local). BENCH_PROFILE_SQL=1 prints the
 * statements of one event of each kind. The claim is the manager's and is not counted.
 * BENCH_PROFILE_PGSS=1 (on a server with pg_stat_statements loaded, `track = all`, and
 * `track_functions = all`) also prints, per kind, the statements and trigger functions
 * that took the most time per event, triggers' own statements included.
 * BENCH_PROFILE_DROP_TRIGGERS=f1,f2 drops, before the events run, every trigger that
 * calls one of these functions (to weigh what they cost; the events' results are the
 * same, only the logs and counts those triggers keep go stale).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { EventRunner } from '../src/events/event-runner.js';
import { LeaseEvent } from '../src/model/lease-event.entity.js';
import { sql } from '../src/database/sql.js';
import { processCpuSeconds } from './machine.js';
import { withAdmin } from './scenario.js';
import { dbUrl, LENGTH, prepare, STORM } from './storm.js';
import { printTopStatements } from './storm-meter.js';

const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LEASES = Number(process.env.BENCH_PROFILE_LEASES ?? 100);
const SHOW_SQL = process.env.BENCH_PROFILE_SQL === '1';
const PGSS = process.env.BENCH_PROFILE_PGSS === '1';
const DROP = (process.env.BENCH_PROFILE_DROP_TRIGGERS ?? '').split(',').filter(Boolean);
/** Events of each kind run first and not counted (plans cached, pool connections open). */
const WARM_UP = 5;
const OWNER = 'event-profile';

/** Records the text of every statement this process sends. */
const sent: string[] = [];
function record(): void {
  const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0] as string | { text?: string; statement?: { text: string } };
    const text =
      typeof first === 'string' ? first : (first.text ?? first.statement?.text ?? '(framed)');
    sent.push(text.replace(/\s+/g, ' ').trim());
    return original.apply(this, args);
  };
}

interface Row {
  kind: string;
  events: number;
  statements: number;
  nodeMs: number;
  postgresMs: number;
  wallMs: number;
}

async function backendPids(ds: DataSource): Promise<number[]> {
  const rows: { pid: number }[] = await ds.query(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend'`,
  );
  return rows.map((r) => r.pid);
}

/** Claims the events of `type` of leases whose reservation is `resourceType`, as a manager would. */
async function claim(ds: DataSource, type: string, resourceType: string): Promise<LeaseEvent[]> {
  const { rows } = await sql<{ id: string }>(
    ds.manager,
    `UPDATE events e SET status = 'IN_PROGRESS', claimed_by = $3, attempts = attempts + 1,
            claim_expires_at = now() + interval '1 day'
       FROM reservations r
      WHERE r.lease_id = e.lease_id AND r.resource_type = $2 AND e.event_type = $1
        AND e.status = 'UNDONE'
      RETURNING e.id`,
    [type, resourceType, OWNER],
  );
  const events = await ds
    .getRepository(LeaseEvent)
    .createQueryBuilder('e')
    .where('e.id = ANY(:ids)', { ids: rows.map((r) => r.id) })
    .orderBy('e.lease_id')
    .getMany();
  return events;
}

async function profile(
  ds: DataSource,
  runner: EventRunner,
  type: string,
  resourceType: string,
): Promise<Row> {
  const kind = `${type} ${resourceType}`;
  const events = await claim(ds, type, resourceType);
  for (const event of events.slice(0, WARM_UP)) await runner.run(event, OWNER);
  const counted = events.slice(WARM_UP);
  if (PGSS) await resetServerStats(ds);
  const pids = await backendPids(ds);
  const pgBefore = new Map(pids.map((pid) => [pid, processCpuSeconds(pid)]));
  const cpuBefore = process.cpuUsage();
  const first = sent.length;
  const t0 = process.hrtime.bigint();
  let shown = !SHOW_SQL;
  for (const event of counted) {
    const from = sent.length;
    await runner.run(event, OWNER);
    if (!shown) {
      shown = true;
      console.log(`\n-- ${kind}: ${sent.length - from} statements`);
      for (const text of sent.slice(from)) console.log(`  ${text.slice(0, 200)}`);
    }
  }
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const statements = sent.length - first;
  const cpu = process.cpuUsage(cpuBefore);
  let pgSeconds = 0;
  for (const pid of await backendPids(ds)) {
    pgSeconds += processCpuSeconds(pid) - (pgBefore.get(pid) ?? 0);
  }
  const [{ n }]: { n: string }[] = await ds.query(
    `SELECT count(*) AS n FROM events WHERE claimed_by = $1 OR (id = ANY($2) AND status <> 'DONE')`,
    [OWNER, counted.map((e) => e.id)],
  );
  if (Number(n) > 0) throw new Error(`${kind}: ${n} events not DONE`);
  const per = counted.length;
  if (PGSS) await printServerStats(ds, kind, per);
  return {
    kind,
    events: per,
    statements: statements / per,
    nodeMs: (cpu.user + cpu.system) / 1000 / per,
    postgresMs: (pgSeconds * 1000) / per,
    wallMs: wallMs / per,
  };
}

async function dropTriggers(ds: DataSource, functions: string[]): Promise<void> {
  const found: { tgname: string; rel: string }[] = await ds.query(
    `SELECT t.tgname, t.tgrelid::regclass::text AS rel FROM pg_trigger t
       JOIN pg_proc p ON p.oid = t.tgfoid
      WHERE NOT t.tgisinternal AND p.proname = ANY($1)`,
    [functions],
  );
  for (const t of found) await ds.query(`DROP TRIGGER ${t.tgname} ON ${t.rel}`);
  console.log(`dropped ${found.length} triggers: ${found.map((t) => t.tgname).join(', ')}`);
}

async function resetServerStats(ds: DataSource): Promise<void> {
  await ds.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
  await ds.query(`SELECT pg_stat_statements_reset(), pg_stat_reset()`);
}

/** Backends flush function counts at most once a second, or after 10 s idle. */
const STATS_FLUSH_MS = 11_000;

async function printServerStats(ds: DataSource, kind: string, per: number): Promise<void> {
  await new Promise((r) => setTimeout(r, STATS_FLUSH_MS));
  await printTopStatements((text) => ds.query(text), kind, per, 30);
  const fnRows: { name: string; calls: string; total: number; self: number }[] = await ds.query(
    `SELECT funcname AS name, calls, total_time AS total, self_time AS self
       FROM pg_stat_user_functions ORDER BY total_time DESC`,
  );
  console.log(`-- ${kind}: functions, ms per event (total / self) and calls per event`);
  for (const r of fnRows) {
    console.log(
      `  ${(r.total / per).toFixed(3)} / ${(r.self / per).toFixed(3)} x${(Number(r.calls) / per).toFixed(1)} ${r.name}`,
    );
  }
}

async function main(): Promise<void> {
  const name = `climate_profile_${randomBytes(4).toString('hex')}`;
  await withAdmin(SERVER, (c) => c.query(`CREATE DATABASE ${name}`));
  try {
    const url = dbUrl(SERVER, name);
    await prepare({ hostLeases: LEASES, instanceLeases: LEASES }, url);
    const clock = new FakeClock(STORM);
    const config = {
      ...loadConfig({
        DATABASE_URL: url,
        ROLE: 'manager',
        PLUGINS: 'physical:host,virtual:instance',
        LOG_LEVEL: 'error',
        MINUTES_BEFORE_END_LEASE: '0',
      }),
      managerTimer: false,
    };
    const app = await buildApp(config, { clock, logger: false });
    await app.init();
    record();
    try {
      const ds = app.get(DataSource);
      const runner = app.get(EventRunner);
      const rows: Row[] = [];
      if (DROP.length > 0) await dropTriggers(ds, DROP);
      for (const type of ['physical:host', 'virtual:instance'])
        rows.push(await profile(ds, runner, 'start_lease', type));
      clock.set(new Date(STORM.getTime() + LENGTH));
      for (const type of ['physical:host', 'virtual:instance'])
        rows.push(await profile(ds, runner, 'end_lease', type));
      console.log('\n| event | events | statements | Node CPU ms | PostgreSQL CPU ms | wall ms |');
      console.log('|---|--:|--:|--:|--:|--:|');
      for (const r of rows) {
        console.log(
          `| ${r.kind} | ${r.events} | ${r.statements.toFixed(1)} | ${r.nodeMs.toFixed(2)} | ` +
            `${r.postgresMs.toFixed(2)} | ${r.wallMs.toFixed(2)} |`,
        );
      }
    } finally {
      await app.close();
    }
  } finally {
    await withAdmin(SERVER, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
