/**
 * `node dist-bench/bench/summary.js run1.json run2.json …`: the median of several
 * `BENCH_OUT` files (bench/run.ts) as one Markdown table, an operation per row and a fleet
 * size per column: p50 / p99 ms and, in brackets, the median of each run's ratio of the
 * p50 to that run's bare create (the ratios the issues set). The storm's figures follow,
 * a row per manager count and phase. Only the `today` shape is summed up unless
 * BENCH_SUMMARY_SHAPE says otherwise.
 */
import { readFileSync } from 'node:fs';
import type { ScenarioResult } from './scenario.js';
import type { Figure } from './stats.js';
import type { StormFigure } from './storm.js';

interface Run {
  machine: string;
  at: string;
  results: ScenarioResult[];
  storm: StormFigure[];
}

const BARE_CREATE = 'lease create, physical:host min=max=1';
const SHAPE = process.env.BENCH_SUMMARY_SHAPE ?? 'today';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** A power row's label carries its ratio ("… (3.2x create)"): the same row in every run. */
const rowName = (label: string) => label.replace(/ \(\d+(\.\d+)?x create\)$/, '');

const fixed = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** One cell: median p50 / p99 and the median ratio to the bare create. */
function cell(figures: { figure: Figure; bare: number | undefined }[]): string {
  if (figures.length === 0) return '';
  const p50 = median(figures.map((f) => f.figure.p50));
  const p99 = median(figures.map((f) => f.figure.p99));
  const ratios = figures.filter((f) => f.bare).map((f) => f.figure.p50 / (f.bare as number));
  const ratio = ratios.length ? ` (${median(ratios).toFixed(1)}×)` : '';
  return `${fixed(p50)} / ${fixed(p99)}${ratio}`;
}

export function summarize(runs: Run[]): string {
  const scenarios = runs.flatMap((r) => r.results).filter((s) => s.shape === SHAPE);
  const sizes = [...new Set(scenarios.map((s) => s.hosts))].sort((a, b) => a - b);
  const rows: string[] = [];
  for (const s of scenarios) {
    for (const f of s.figures) if (!rows.includes(rowName(f.label))) rows.push(rowName(f.label));
  }
  const at = (hosts: number) => scenarios.filter((s) => s.hosts === hosts);
  const head = `| p50 / p99 ms (× a bare create's p50) | ${sizes.map((n) => `${n.toLocaleString('en-US')} hosts`).join(' | ')} |`;
  const rule = `|---|${sizes.map(() => '--:').join('|')}|`;
  const lines = [head, rule];
  for (const row of rows) {
    const cells = sizes.map((hosts) =>
      cell(
        at(hosts).flatMap((s) => {
          const bare = s.figures.find((f) => f.label === BARE_CREATE)?.p50;
          const figure = s.figures.find((f) => rowName(f.label) === row);
          return figure ? [{ figure, bare: row === BARE_CREATE ? undefined : bare }] : [];
        }),
      ),
    );
    lines.push(`| ${row} | ${cells.join(' | ')} |`);
  }
  const through = (pick: (s: ScenarioResult) => number, digits: number) =>
    sizes.map((hosts) => median(at(hosts).map(pick)).toFixed(digits));
  lines.push(
    `| creates/s, 64 clients | ${through((s) => s.throughput.perSecond, 0).join(' | ')} |`,
  );
  const node = through((s) => s.throughput.nodeCpuMs, 2);
  const pg = through((s) => s.throughput.postgresCpuMs, 2);
  lines.push(
    `| CPU per create, Node / PostgreSQL (ms) | ${node.map((n, i) => `${n} / ${pg[i]}`).join(' | ')} |`,
  );
  const counts = sizes.map((hosts) => at(hosts).length);
  lines.push('', `Runs per size: ${counts.join(', ')}; shape ${SHAPE}.`);
  const storms = runs.flatMap((r) => r.storm ?? []);
  if (storms.length > 0) lines.push('', stormTable(storms));
  return lines.join('\n');
}

function stormTable(figures: StormFigure[]): string {
  const lines = [
    '| managers | phase | runs | all done s | lag p50 / p99 / max s | Node / PostgreSQL CPU ms per event |',
    '|--:|---|--:|--:|---|---|',
  ];
  const keys = [...new Set(figures.map((f) => `${f.managers} ${f.phase}`))];
  for (const key of keys) {
    const same = figures.filter((f) => `${f.managers} ${f.phase}` === key);
    const m = (pick: (f: StormFigure) => number) => median(same.map(pick)).toFixed(1);
    lines.push(
      `| ${same[0].managers} | ${same[0].phase} | ${same.length} | ${m((f) => f.seconds)} | ` +
        `${m((f) => f.p50)} / ${m((f) => f.p99)} / ${m((f) => f.max)} | ` +
        `${m((f) => f.cost.nodeMs / f.leases)} / ${m((f) => f.cost.postgresMs / f.leases)} |`,
    );
  }
  return lines.join('\n');
}

if (require.main === module) {
  const runs = process.argv.slice(2).map((path) => JSON.parse(readFileSync(path, 'utf8')) as Run);
  if (runs.length === 0) {
    console.error('usage: node dist-bench/bench/summary.js <BENCH_OUT file>…');
    process.exit(2);
  }
  console.log(`${runs[0].machine}; runs ${runs.map((r) => r.at).join(', ')}\n`);
  console.log(summarize(runs));
}
