import type { ScenarioResult } from './scenario.js';

const ms = (n: number) => n.toFixed(2);

/** The bare create each figure's p50 is divided by, measured in the same scenario. */
const BARE_CREATE = 'lease create, physical:host min=max=1';

/** The whole sweep as one Markdown table: a row per size, shape and operation. */
export function formatTable(results: ScenarioResult[]): string {
  const rows: string[][] = [
    ['hosts', 'shape', 'operation', 'n', 'p50 ms', 'p99 ms', 'stmts/req', 'p50 / create'],
  ];
  for (const r of results) {
    const size = r.hosts.toLocaleString('en-US');
    const bare = r.figures.find((f) => f.label === BARE_CREATE)?.p50;
    rows.push([size, r.shape, 'seed', '1', ms(r.seedSeconds * 1000), '', '', '']);
    for (const f of r.figures) {
      rows.push([
        size,
        r.shape,
        f.label,
        String(f.runs),
        ms(f.p50),
        ms(f.p99),
        f.statements.toFixed(1),
        bare === undefined ? '' : (f.p50 / bare).toFixed(1),
      ]);
    }
    const t = r.throughput;
    rows.push([
      size,
      r.shape,
      `creates/s, ${t.clients} clients: ${t.perSecond.toFixed(0)}; CPU/create Node server ${ms(t.nodeCpuMs)} ms (clients ${ms(t.clientCpuMs)} ms), PostgreSQL ${ms(t.postgresCpuMs)} ms`,
      String(t.creates),
      '',
      '',
      t.statements.toFixed(1),
      '',
    ]);
    rows.push([
      size,
      r.shape,
      `claims/s, 32 clients: ${r.claimsPerSecond.toFixed(0)}`,
      '2000',
      '',
      '',
      '',
      '',
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const numeric = new Set([0, 3, 4, 5, 6, 7]);
  const line = (row: string[]) =>
    `| ${row.map((cell, c) => (numeric.has(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join(' | ')} |`;
  const rule = `|${widths.map((w, c) => (numeric.has(c) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(rows[0]), rule, ...rows.slice(1).map(line)].join('\n');
}
