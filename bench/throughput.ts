import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { ManagerService } from '../src/events/manager.service.js';
import type { FakeClock } from '../src/common/clock.js';
import { BenchClient, fmt, hostLease, REQUEST_TIMEOUT_MS } from './http.js';
import type { LoadOrder, LoadResult } from './load.js';
import { processCpuSeconds } from './machine.js';
import { profiled } from './profile.js';
import { statements } from './stats.js';

/** Creates/s under concurrency and what each create costs in CPU, Node and PostgreSQL. */
export interface Throughput {
  clients: number;
  creates: number;
  seconds: number;
  perSecond: number;
  /** The server's Node CPU per create (the bench process, without the clients). */
  nodeCpuMs: number;
  /** The clients' Node CPU per create, in their own process. */
  clientCpuMs: number;
  postgresCpuMs: number;
  statements: number;
}

/**
 * The pids of the app pool's backends (not autovacuum's), from pg_stat_activity. The one
 * asking is one of them and counts too: left out, it was whichever pool connection ran
 * this query, so a backend asked from before and counted after added its whole life's CPU
 * (the seed's, 200 s at 100,000 hosts: 60 ms per create) and one asked from both times
 * lost its share of the load.
 */
async function backendPids(ds: DataSource): Promise<number[]> {
  const rows: { pid: number }[] = await ds.query(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND backend_type = 'client backend'`,
  );
  return rows.map((r) => r.pid);
}

/** Runs the create load in a forked Node process and waits for its result. */
function forkLoad(order: LoadOrder): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(join(__dirname, 'load.js'), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: LoadResult | undefined;
    child.once('message', (message) => (result = message as LoadResult));
    child.once('error', reject);
    child.once('exit', (code) =>
      result ? resolve(result) : reject(new Error(`the load process exited with ${code}`)),
    );
    child.send(order);
  });
}

/**
 * `clients` concurrent clients create one-host leases for `seconds`, from a forked Node
 * process, so the bench process's `cpuUsage` delta is the server's alone. CPU per create
 * is that delta and the summed utime+stime (/proc/<pid>/stat) of the bench database's
 * backends, each divided by the successful creates; the load process's own CPU is
 * reported apart. The server is local, so its backends' /proc entries are readable.
 */
export async function createThroughput(
  http: BenchClient,
  ds: DataSource,
  start: Date,
  clients: number,
  seconds: number,
  /** Names the CPU profile, with BENCH_CPU_PROFILE: `create-<label>.cpuprofile`. */
  label: string,
): Promise<Throughput> {
  // Warm the pool up to its size first, so its backends exist before the snapshot.
  await Promise.all(
    Array.from({ length: clients }, (_, c) =>
      http.post('/v1/leases', hostLease(start, 900_000 + c, 1), [201, 409]),
    ),
  );
  const pids = await backendPids(ds);
  const pgBefore = new Map(pids.map((pid) => [pid, processCpuSeconds(pid)]));
  const cpuBefore = process.cpuUsage();
  const stmtsBefore = statements.count;
  const load = await profiled(`create-${label}`, () =>
    forkLoad({ base: http.base, clients, seconds, start: start.toISOString(), first: 20_000 }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const stmts = statements.count - stmtsBefore;
  let pgSeconds = 0;
  for (const pid of await backendPids(ds)) {
    pgSeconds += processCpuSeconds(pid) - (pgBefore.get(pid) ?? 0);
  }
  const ok = load.created;
  const result: Throughput = {
    clients,
    creates: ok,
    seconds: load.seconds,
    perSecond: ok / load.seconds,
    nodeCpuMs: (cpu.user + cpu.system) / 1000 / ok,
    clientCpuMs: load.cpuMs / ok,
    postgresCpuMs: (pgSeconds * 1000) / ok,
    statements: stmts / load.sent,
  };
  console.log(
    `  creates, ${clients} concurrent clients: ${ok} of ${load.sent} in ${load.seconds.toFixed(1)} s = ` +
      `${result.perSecond.toFixed(0)}/s; CPU per create: Node ${result.nodeCpuMs.toFixed(2)} ms ` +
      `(${((100 * cpu.system) / (cpu.user + cpu.system)).toFixed(0)} % in the kernel; ` +
      `the clients' process ${result.clientCpuMs.toFixed(2)} ms more), ` +
      `PostgreSQL ${result.postgresCpuMs.toFixed(2)} ms (${pids.length} backends)`,
  );
  return result;
}

/** 32 concurrent claimers drain an active reservation of 2,000 slots; claims per second. */
export async function claimThroughput(
  http: BenchClient,
  app: INestApplication,
  clock: FakeClock,
): Promise<number> {
  const amount = 2000;
  const res = await fetch(`${http.base}/v1/leases`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    body: JSON.stringify({
      name: 'claims',
      start_date: 'now',
      end_date: fmt(new Date(clock.now().getTime() + 3600_000)),
      reservations: [
        {
          resource_type: 'virtual:instance',
          vcpus: 1,
          memory_mb: 1024,
          disk_gb: 1,
          amount,
          affinity: null,
          resource_properties: '',
        },
      ],
    }),
  });
  const lease = ((await res.json()) as { lease: { reservations: { id: string }[] } }).lease;
  const manager = app.get(ManagerService);
  await manager.tick();
  await manager.drain();
  const id = lease.reservations[0].id;
  let next = 0;
  let ok = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < amount) {
        const n = next++;
        const status = await http.post(
          `/v1/reservations/${id}/claims`,
          { server_id: `server-${n}` },
          [],
        );
        if (status === 201) ok++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `  claims, 32 concurrent claimers: ${ok} of ${amount} in ${seconds.toFixed(2)} s = ${(ok / seconds).toFixed(0)} claims/s`,
  );
  return ok / seconds;
}
