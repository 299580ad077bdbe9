/**
 * `npm run bench:reach`: which folders and files of src/ a lease create and a manager
 * start run code in (V8's precise coverage, counts reset before each, after a warm-up of
 * each so that lazy start-up work is not counted). A check of the layout, not of speed:
 * it prints the folders, then every file with how many of its functions ran.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { ManagerService } from '../src/events/manager.service.js';
import { withAdmin } from './scenario.js';

const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The compiled src/ (dist-bench/src), whose files stand for src/'s. */
const SRC = join(__dirname, '..', 'src') + sep;

interface Coverage {
  url: string;
  functions: { functionName: string; ranges: { count: number }[] }[];
}

/** src/ files (relative) → functions that ran at least once since the last take. */
async function ran(session: Session): Promise<Map<string, number>> {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as {
    result: Coverage[];
  };
  const files = new Map<string, number>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const path = fileURLToPath(script.url);
    if (!path.startsWith(SRC)) continue;
    const count = script.functions.filter(
      (f) => f.functionName !== '' && f.ranges[0].count > 0,
    ).length;
    if (count > 0) files.set(relative(SRC, path).replace(/\.js$/, '.ts'), count);
  }
  return files;
}

function report(title: string, files: Map<string, number>): void {
  const folders = new Set(
    [...files.keys()].map((f) => (f.includes(sep) ? f.split(sep)[0] : '(root)')),
  );
  console.log(`\n${title}: ${folders.size} folders, ${files.size} files`);
  console.log(`  folders: ${[...folders].sort().join(' ')}`);
  for (const [file, count] of [...files].sort()) console.log(`  ${file} (${count})`);
}

async function main(): Promise<void> {
  const name = `climate_reach_${randomBytes(4).toString('hex')}`;
  await withAdmin(SERVER, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const clock = new FakeClock(new Date('2035-01-01T00:00:00Z'));
  const config = {
    ...loadConfig({
      DATABASE_URL: url.toString(),
      PLUGINS: 'physical:host,virtual:instance',
      LOG_LEVEL: 'error',
    }),
    managerTimer: false,
  };
  const app = await buildApp(config, { clock, logger: false });
  const session = new Session();
  session.connect();
  try {
    await app.listen(0, '127.0.0.1');
    const { port } = (app.getHttpServer() as { address(): AddressInfo }).address();
    const manager = app.get(ManagerService);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    for (const host of ['reach-1', 'reach-2', 'reach-3'])
      await post('/v1/os-hosts', { name: host });
    const lease = (n: number) => ({
      name: `reach-${n}`,
      start_date: new Date(clock.now().getTime() + 3600_000)
        .toISOString()
        .slice(0, 16)
        .replace('T', ' '),
      end_date: new Date(clock.now().getTime() + 36_000_000)
        .toISOString()
        .slice(0, 16)
        .replace('T', ' '),
      reservations: [
        {
          resource_type: 'physical:host',
          min: 1,
          max: 1,
          hypervisor_properties: '',
          resource_properties: '',
        },
      ],
    });
    const settle = async () => {
      while ((await manager.tick()) > 0) await manager.drain();
      await manager.drain();
    };
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    // warm-up: a create and its start, not counted
    await post('/v1/leases', lease(0));
    clock.advance(3600_000 + 60_000);
    await settle();
    await ran(session);
    await post('/v1/leases', lease(1));
    report('lease create (POST /v1/leases, one host)', await ran(session));
    clock.advance(3600_000 + 60_000);
    await ran(session);
    await settle();
    report('manager start (a poll that runs one start_lease)', await ran(session));
  } finally {
    session.disconnect();
    await app.close();
    await withAdmin(SERVER, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
