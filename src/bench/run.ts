/**
 * `npm run bench`: Climate at 10,000 hosts and 100,000 allocations over a year, on a
 * fresh PostgreSQL database (BENCH_DATABASE_URL, default the local test server).
 * Prints median and p99 latency of the hot paths, measured over HTTP on loopback.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import type { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ManagerService } from '../events/manager.service.js';
import { buildApp } from '../app.js';
import { FakeClock } from '../common/clock.js';
import { loadConfig } from '../config/config.js';
import { seed } from './seed.js';

const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const HOSTS = Number(process.env.BENCH_HOSTS ?? 10_000);
const PER_HOST = Number(process.env.BENCH_ALLOCATIONS_PER_HOST ?? 10);
/** A request that takes longer than this is a hung bench, not a figure. */
const REQUEST_TIMEOUT_MS = 60_000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(
  label: string,
  runs: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  for (let i = 0; i < Math.min(5, runs); i++) await fn(100_000 + i); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const p50 = percentile(times, 50).toFixed(2);
  const p99 = percentile(times, 99).toFixed(2);
  console.log(
    `${label.padEnd(44)} n=${String(runs).padStart(4)}  p50 ${p50.padStart(7)} ms  p99 ${p99.padStart(7)} ms`,
  );
}

/** 32 concurrent claimers drain an active reservation of 2,000 slots. */
async function claimThroughput(
  base: string,
  app: INestApplication,
  clock: FakeClock,
): Promise<void> {
  const fmt = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
  const amount = 2000;
  const res = await fetch(`${base}/v1/leases`, {
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
        const r = await fetch(`${base}/v1/reservations/${id}/claims`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
          body: JSON.stringify({ server_id: `server-${n}` }),
        });
        await r.text();
        if (r.status === 201) ok++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `claims, 32 concurrent claimers: ${ok} of ${amount} in ${seconds.toFixed(2)} s = ${(ok / seconds).toFixed(0)} claims/s`,
  );
}

async function withAdmin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: SERVER });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const name = `climate_bench_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const start = new Date('2035-01-01T00:00:00Z');
  const clock = new FakeClock(start);
  const config = {
    ...loadConfig({
      DATABASE_URL: url.toString(),
      PLUGINS: 'physical:host,virtual:instance',
      LOG_LEVEL: 'error',
    }),
    managerTimer: false,
  };
  const app = await buildApp(config, { clock, logger: false });
  try {
    await app.listen(0, '127.0.0.1');
    const server = app.getHttpServer() as { address(): AddressInfo };
    const base = `http://127.0.0.1:${server.address().port}`;
    const t0 = Date.now();
    console.log(`seeding ${HOSTS} hosts with ${PER_HOST} allocations each…`);
    await seed(app.get(DataSource), HOSTS, PER_HOST, start, (done, total) => {
      const seconds = ((Date.now() - t0) / 1000).toFixed(1);
      console.log(
        `  seeded ${done} of ${total} hosts (${Math.round((100 * done) / total)}%), ${seconds} s`,
      );
    });
    console.log(
      `seeded ${HOSTS} hosts and ${HOSTS * PER_HOST} allocations in ${Date.now() - t0} ms`,
    );

    const post = async (path: string, body: unknown, expect: number[]) => {
      const res = await fetch(base + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (!expect.includes(res.status)) throw new Error(`${path}: ${res.status} ${text}`);
    };
    const get = async (path: string) => {
      const res = await fetch(base + path, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    };
    const day = 86_400_000;
    const leaseBody = (i: number, count: number) => {
      const s = new Date(start.getTime() + ((i * 7919) % 360) * day + 3600_000);
      const fmt = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
      return {
        name: `bench-${count}-${i}`,
        start_date: fmt(s),
        end_date: fmt(new Date(s.getTime() + 6 * 3600_000)),
        reservations: [
          {
            resource_type: 'physical:host',
            min: count,
            max: count,
            hypervisor_properties: '',
            resource_properties: '',
          },
        ],
      };
    };
    await measure('lease create, no reservations', 300, (i) =>
      post('/v1/leases', { ...leaseBody(i, 1), reservations: [] }, [201]),
    );
    await measure('lease create, physical:host min=max=1', 300, (i) =>
      post('/v1/leases', leaseBody(i, 1), [201]),
    );
    await measure('lease create, physical:host min=max=10', 200, (i) =>
      post('/v1/leases', leaseBody(i + 1000, 10), [201]),
    );
    await measure('lease create, gpu hosts, min=max=2', 100, (i) =>
      post(
        '/v1/leases',
        {
          ...leaseBody(i + 2000, 2),
          reservations: [
            {
              resource_type: 'physical:host',
              min: 2,
              max: 2,
              hypervisor_properties: '',
              resource_properties: '["==", "$gpu", "True"]',
            },
          ],
        },
        [201, 409],
      ),
    );
    await measure(`scheduler filter, all ${HOSTS} hosts, no hint`, 100, () =>
      post('/v1/scheduler/filter', { project_id: 'p1', hints: {} }, [200]),
    );
    const ds = app.get(DataSource);
    await measure(`scheduler filter, all ${HOSTS} hosts, after a pool change`, 50, async () => {
      await ds.query('UPDATE pool_state SET version = version + 1');
      await post('/v1/scheduler/filter', { project_id: 'p1', hints: {} }, [200]);
    });
    await measure('scheduler filter, 50 named hosts, hint', 200, () =>
      post(
        '/v1/scheduler/filter',
        {
          project_id: 'p1',
          hosts: Array.from({ length: 50 }, (_, i) => `bench-${String(i + 1).padStart(5, '0')}`),
          hints: { reservation: '00000000-0000-0000-0000-000000000000' },
        },
        [200],
      ),
    );
    await measure('availability, 10 hosts for 2d', 50, () =>
      get('/v1/os-hosts/availability?count=10&duration=2d&limit=3'),
    );
    await measure('availability, 5 gpu hosts for 7d', 50, () =>
      get(
        `/v1/os-hosts/availability?count=5&duration=7d&resource_properties=${encodeURIComponent('["==", "$gpu", "True"]')}`,
      ),
    );
    await measure('capacity plan, 1 year by day', 20, () =>
      get('/v1/os-hosts/capacity?start=2035-01-01%2000:00&end=2036-01-01%2000:00&step=1d'),
    );
    await measure('lease list, limit 100', 100, () => get('/v1/leases?limit=100'));

    const slots = (i: number, amount: number) => ({
      ...leaseBody(i, 1),
      reservations: [
        {
          resource_type: 'virtual:instance',
          vcpus: 2,
          memory_mb: 4096,
          disk_gb: 20,
          amount,
          affinity: null,
          resource_properties: '',
        },
      ],
    });
    await measure('lease create, virtual:instance amount=1', 200, (i) =>
      post('/v1/leases', slots(i + 3000, 1), [201]),
    );
    await measure('lease create, virtual:instance amount=10', 100, (i) =>
      post('/v1/leases', slots(i + 4000, 10), [201]),
    );
    await claimThroughput(base, app, clock);
  } finally {
    await app.close();
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
