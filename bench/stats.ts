import { Client } from 'pg';

/** One measured operation: its latency percentiles and SQL statements per request. */
export interface Figure {
  label: string;
  runs: number;
  p50: number;
  p99: number;
  statements: number;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Counts the statements this process sends to PostgreSQL. The server has no
 * pg_stat_statements loaded, and the app runs in-process, so every query the app's
 * TypeORM pool makes passes through `pg.Client.prototype.query`.
 */
class StatementCounter {
  count = 0;
  private installed = false;

  install(): void {
    if (this.installed) return;
    this.installed = true;
    const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const counter = this; // eslint-disable-line @typescript-eslint/no-this-alias
    proto.query = function (this: unknown, ...args: unknown[]) {
      counter.count++;
      return original.apply(this, args);
    };
  }
}

export const statements = new StatementCounter();

/** Runs made however slow the operation: a p99 of 3 is the slowest of them. */
const MIN_RUNS = 3;

/**
 * Runs `fn` up to `runs` times after a short warm-up, stopping early (after at least
 * MIN_RUNS runs) once `budgetMs` is spent so a slow operation at 100k hosts cannot stall the
 * sweep. `fn` returns how many of its statements were bench plumbing, not the request.
 */
export async function measure(
  label: string,
  runs: number,
  budgetMs: number,
  fn: (i: number) => Promise<number | void>,
): Promise<Figure> {
  const warmUp = Date.now();
  for (let i = 0; i < Math.min(3, runs); i++) {
    await fn(100_000 + i);
    if (Date.now() - warmUp > budgetMs / 4) break;
  }
  const times: number[] = [];
  const before = statements.count;
  let plumbing = 0;
  const started = Date.now();
  for (let i = 0; i < runs; i++) {
    if (i >= MIN_RUNS && Date.now() - started > budgetMs) break;
    const t0 = process.hrtime.bigint();
    plumbing += (await fn(i)) ?? 0;
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const perRequest = (statements.count - before - plumbing) / times.length;
  times.sort((a, b) => a - b);
  const figure = {
    label,
    runs: times.length,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    statements: perRequest,
  };
  console.log(
    `  ${label.padEnd(46)} n=${String(figure.runs).padStart(4)}  p50 ${figure.p50.toFixed(2).padStart(8)} ms` +
      `  p99 ${figure.p99.toFixed(2).padStart(8)} ms  ${perRequest.toFixed(1).padStart(6)} stmts/req`,
  );
  return figure;
}
