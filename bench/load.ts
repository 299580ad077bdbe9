/**
 * The create load of the throughput step, run in its own Node process (forked by
 * throughput.ts), so that the bench process's CPU is the server's alone: the clients'
 * JSON and HTTP work is counted here and reported apart.
 */
import { BenchClient, hostLease } from './http.js';

export interface LoadOrder {
  base: string;
  clients: number;
  seconds: number;
  start: string;
  /** The first lease index used, so runs never ask for the same window twice. */
  first: number;
}

export interface LoadResult {
  created: number;
  sent: number;
  seconds: number;
  cpuMs: number;
}

export async function runLoad(order: LoadOrder): Promise<LoadResult> {
  const http = new BenchClient(order.base);
  const start = new Date(order.start);
  const cpuBefore = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const deadline = Date.now() + order.seconds * 1000;
  let next = order.first;
  let created = 0;
  await Promise.all(
    Array.from({ length: order.clients }, async () => {
      while (Date.now() < deadline) {
        const status = await http.post('/v1/leases', hostLease(start, next++, 1), [201, 409]);
        if (status === 201) created++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  return {
    created,
    sent: next - order.first,
    seconds: Number(process.hrtime.bigint() - t0) / 1e9,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

if (process.send) {
  process.once('message', (order: LoadOrder) => {
    runLoad(order).then(
      (result) => process.send?.(result, () => process.exit(0)),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
