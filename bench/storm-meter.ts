/**
 * What a storm phase costs, over all its events: the statements the managers sent, their
 * Node CPU (each reports its own from storm-manager.ts), the CPU of the database's
 * backends (/proc, the server being local), and what active backends waited on, sampled
 * with every progress poll (pg_stat_activity), with the load average at the end.
 * BENCH_STORM_PGSS=1, on a server with pg_stat_statements loaded (`track = all` to see
 * triggers' statements), also prints each phase's costliest statements per event.
 */
import type { ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import type { Client } from 'pg';
import { processCpuSeconds } from './machine.js';

/** A manager's running totals, sent when the bench asks (`'stats'`). */
export interface ManagerStats {
  statements: number;
  cpuMs: number;
}

export interface PhaseCost {
  statements: number;
  nodeMs: number;
  postgresMs: number;
  /** Backends waiting, by wait event, summed over the samples (`Lock:transactionid`…). */
  waits: Record<string, number>;
  samples: number;
  load: number;
}

function askStats(child: ChildProcess): Promise<ManagerStats> {
  return new Promise((resolve) => {
    const answer = (message: unknown) => {
      if (typeof message !== 'object' || message === null || !('statements' in message)) return;
      child.off('message', answer);
      resolve(message as ManagerStats);
    };
    child.on('message', answer);
    child.send('stats');
  });
}

async function managersTotal(children: ChildProcess[]): Promise<ManagerStats> {
  const all = await Promise.all(children.map(askStats));
  return all.reduce((a, b) => ({
    statements: a.statements + b.statements,
    cpuMs: a.cpuMs + b.cpuMs,
  }));
}

async function backendCpu(db: Client): Promise<Map<number, number>> {
  const { rows } = await db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend'
        AND pid <> pg_backend_pid()`,
  );
  return new Map(rows.map((r) => [r.pid, processCpuSeconds(r.pid)]));
}

const PGSS = process.env.BENCH_STORM_PGSS === '1';

/** Clears pg_stat_statements (BENCH_STORM_PGSS=1) before a phase. */
export async function resetStatements(db: Client): Promise<void> {
  if (!PGSS) return;
  await db.query(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
  await db.query(`SELECT pg_stat_statements_reset()`);
}

/** The phase's costliest statements (BENCH_STORM_PGSS=1): ms per event, planning apart. */
export async function printStatements(db: Client, label: string, events: number): Promise<void> {
  if (!PGSS) return;
  await printTopStatements(
    (text) => db.query(text).then((r) => r.rows as unknown[]),
    label,
    events,
    25,
  );
}

interface StatementRow {
  top: boolean;
  calls: string;
  exec: number;
  plan: number;
  query: string;
}

/**
 * The database's costliest statements in pg_stat_statements, per event: execution and
 * planning time apart, those sent by Node (`top`) apart from those run inside triggers.
 */
export async function printTopStatements(
  query: (text: string) => Promise<unknown[]>,
  label: string,
  events: number,
  limit: number,
): Promise<void> {
  const rows = (await query(
    `SELECT toplevel AS top, calls, total_exec_time AS exec, total_plan_time AS plan, query
       FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
      ORDER BY total_exec_time + total_plan_time DESC LIMIT ${limit}`,
  )) as StatementRow[];
  const sum = (k: 'exec' | 'plan', top: boolean) =>
    rows.filter((r) => r.top === top).reduce((a, r) => a + r[k], 0) / events;
  console.log(
    `  ${label}: ms per event, exec + plan (top statements ${sum('exec', true).toFixed(3)} + ` +
      `${sum('plan', true).toFixed(3)}; in triggers ${sum('exec', false).toFixed(3)} + ` +
      `${sum('plan', false).toFixed(3)})`,
  );
  for (const r of rows) {
    const text = r.query.replace(/\s+/g, ' ').slice(0, 120);
    console.log(
      `    ${(r.exec / events).toFixed(3)} + ${(r.plan / events).toFixed(3)} ` +
        `${r.top ? 'top' : 'in '} x${(Number(r.calls) / events).toFixed(2)} ${text}`,
    );
  }
}

export class PhaseMeter {
  private readonly waits: Record<string, number> = {};
  private samples = 0;

  private constructor(
    private readonly managers: ManagerStats,
    private readonly backends: Map<number, number>,
  ) {}

  static async start(db: Client, children: ChildProcess[]): Promise<PhaseMeter> {
    return new PhaseMeter(await managersTotal(children), await backendCpu(db));
  }

  /** One look at what the managers' backends wait on. */
  async sample(db: Client): Promise<void> {
    const { rows } = await db.query<{ wait: string; n: string }>(
      `SELECT wait_event_type || ':' || wait_event
              -- a lock wait names its statement: which rows the managers queue on
              || CASE WHEN wait_event_type = 'Lock' THEN ' (' || left(query, 40) || ')' ELSE '' END
              AS wait, count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend'
          AND pid <> pg_backend_pid() AND state <> 'idle' AND wait_event IS NOT NULL
        GROUP BY 1`,
    );
    this.samples++;
    for (const r of rows) this.waits[r.wait] = (this.waits[r.wait] ?? 0) + Number(r.n);
  }

  async stop(db: Client, children: ChildProcess[]): Promise<PhaseCost> {
    const managers = await managersTotal(children);
    let postgres = 0;
    for (const [pid, seconds] of await backendCpu(db)) {
      postgres += seconds - (this.backends.get(pid) ?? 0);
    }
    return {
      statements: managers.statements - this.managers.statements,
      nodeMs: managers.cpuMs - this.managers.cpuMs,
      postgresMs: postgres * 1000,
      waits: this.waits,
      samples: this.samples,
      load: loadavg()[0],
    };
  }
}
