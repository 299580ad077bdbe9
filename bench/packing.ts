/**
 * Placement keeps scarce hosts free: on 3 GPU hosts and `cpuHosts` CPU hosts (the GPU
 * ones first in id order), one-slot leases of 2 vCPU without a property filter fill a
 * week, then a lease asks for the 3 GPU hosts for 2 days in it. Run with HOST_WEIGHTS as
 * configured and with none, for comparison.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { fmt } from './http.js';
import { withAdmin } from './scenario.js';

export interface PackingFigure {
  weights: string;
  slots: number;
  /** Slots that landed on a GPU host. */
  onGpu: number;
  /** Whether the 3 GPU hosts could still be had for 2 days in the window. */
  gpuLease: boolean;
  createP50Ms: number;
}

const T0 = new Date('2035-01-01T00:00:00Z');
const DAY = 86_400_000;

export async function runPacking(
  server: string,
  slots: number,
  cpuHosts: number,
  weights: string,
): Promise<PackingFigure> {
  const name = `climate_pack_${randomBytes(4).toString('hex')}`;
  await withAdmin(server, (c) => c.query(`CREATE DATABASE ${name}`));
  try {
    const url = new URL(server);
    url.pathname = `/${name}`;
    const config = {
      ...loadConfig({
        DATABASE_URL: url.toString(),
        PLUGINS: 'physical:host,virtual:instance',
        LOG_LEVEL: 'error',
        HOST_WEIGHTS: weights,
      }),
      managerTimer: false,
    };
    const app = await buildApp(config, { clock: new FakeClock(T0), logger: false });
    try {
      await app.listen(0, '127.0.0.1');
      const base = `http://127.0.0.1:${(app.getHttpServer() as { address(): AddressInfo }).address().port}`;
      const post = async (path: string, body: unknown) => {
        const res = await fetch(base + path, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(60_000),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      for (let i = 0; i < 3 + cpuHosts; i++) {
        const gpu = i < 3;
        await post('/v1/os-hosts', {
          name: `${gpu ? 'gpu' : 'cpu'}-${String(i + 1).padStart(3, '0')}`,
          vcpus: 32,
          memory_mb: 131072,
          local_gb: 1000,
          gpu: gpu ? 'true' : 'false',
        });
      }
      const start = new Date(T0.getTime() + DAY);
      const window = { start_date: fmt(start), end_date: fmt(new Date(start.getTime() + 7 * DAY)) };
      const times: number[] = [];
      for (let i = 0; i < slots; i++) {
        const t0 = process.hrtime.bigint();
        await post('/v1/leases', {
          name: `pack-${i}`,
          ...window,
          reservations: [
            {
              resource_type: 'virtual:instance',
              vcpus: 2,
              memory_mb: 2048,
              disk_gb: 10,
              amount: 1,
              affinity: null,
              resource_properties: '',
            },
          ],
        });
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      const ds = app.get(DataSource);
      const [{ n }] = await ds.query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM instance_allocations a JOIN hosts h ON h.id = a.host_id
          WHERE h.hypervisor_hostname LIKE 'gpu-%'`,
      );
      const gpu = await post('/v1/leases', {
        name: 'gpus',
        start_date: fmt(new Date(start.getTime() + DAY)),
        end_date: fmt(new Date(start.getTime() + 3 * DAY)),
        reservations: [
          {
            resource_type: 'physical:host',
            min: 3,
            max: 3,
            hypervisor_properties: '',
            resource_properties: '["==", "$gpu", "true"]',
          },
        ],
      });
      times.sort((a, b) => a - b);
      return {
        weights: weights === '' ? '(none)' : weights,
        slots,
        onGpu: n,
        gpuLease: gpu.status === 201,
        createP50Ms: times[Math.floor(times.length / 2)] ?? NaN,
      };
    } finally {
      await app.close();
    }
  } finally {
    await withAdmin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

export function formatPacking(figures: PackingFigure[]): string {
  const lines = [
    '| HOST_WEIGHTS | 2-vCPU slots, no filter | on GPU hosts | 3 GPU hosts for 2 days after | slot create p50 ms |',
    '|---|---|---|---|---|',
  ];
  for (const f of figures) {
    lines.push(
      `| ${f.weights} | ${f.slots} | ${f.onGpu} | ${f.gpuLease ? 'granted' : 'refused'} | ${f.createP50Ms.toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}
