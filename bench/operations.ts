import type { DataSource } from 'typeorm';
import { refreshHostBusy } from '../src/pools/host-busy.js';
import { BenchClient, hostLease, instanceLease } from './http.js';
import { Figure, measure } from './stats.js';

const GPU = '["==", "$gpu", "True"]';

/** Creates made, unmeasured, between the cold figure and the others (see measureOperations). */
export const WARM_UP_CREATES = 1000;

/**
 * Latency and statements per request of each hot path, one after the other. First the
 * one-host create straight after the seed's VACUUM and CHECKPOINT (cold: the pages it
 * writes are not yet in shared buffers and each takes its first full-page image), then
 * WARM_UP_CREATES creates of both kinds unmeasured, then the rest, so they are figures of
 * a database (and a Node process) in use, whatever ran before in the process.
 */
export async function measureOperations(
  http: BenchClient,
  ds: DataSource,
  start: Date,
  hosts: number,
  budgetMs: number,
): Promise<Figure[]> {
  const figures: Figure[] = [];
  const m = async (label: string, runs: number, fn: (i: number) => Promise<number | void>) =>
    figures.push(await measure(label, runs, budgetMs, fn));
  const create = (body: unknown, expect = [201]) => http.post('/v1/leases', body, expect);

  await m('lease create, physical:host min=max=1, cold', 300, async (i) => {
    await create(hostLease(start, i + 10_000, 1));
  });
  for (let i = 0; i < WARM_UP_CREATES; i++) {
    const lease = hostLease(start, i + 60_000, 1);
    await create(i % 2 === 0 ? lease : { ...lease, reservations: [] });
  }
  await m('lease create, no reservations', 300, async (i) => {
    await create({ ...hostLease(start, i, 1), reservations: [] });
  });
  await m('lease create, physical:host min=max=1', 300, async (i) => {
    await create(hostLease(start, i, 1));
  });
  await m('lease create, physical:host min=max=10', 200, async (i) => {
    await create(hostLease(start, i + 1000, 10));
  });
  await m('lease create, gpu hosts, min=max=2', 100, async (i) => {
    await create(hostLease(start, i + 2000, 2, GPU), [201, 409]);
  });
  await m('lease create, virtual:instance amount=1', 200, async (i) => {
    await create(instanceLease(start, i + 3000, 1));
  });
  await m('lease create, virtual:instance amount=10', 100, async (i) => {
    await create(instanceLease(start, i + 4000, 10));
  });

  const filter = (explain: boolean) => () =>
    http.post(
      `/v1/scheduler/filter${explain ? '?explain=true' : ''}`,
      { project_id: 'p1', hints: {} },
      [200],
    );
  await m(`scheduler filter, all hosts, passing only`, 100, async () => {
    await filter(false)();
  });
  await m(`scheduler filter, all hosts, ?explain=true`, 100, async () => {
    await filter(true)();
  });
  await m(`scheduler filter, after a pool change`, 50, async () => {
    await ds.query('UPDATE pool_state_shards SET version = version + 1 WHERE id = 1');
    await filter(false)();
    return 1; // the UPDATE is the bench's, not the request's
  });
  // What Nova's filter sends: the hosts left by the filters before it, by name.
  const names = (n: number) =>
    Array.from({ length: n }, (_, i) => `bench-${String(i + 1).padStart(6, '0')}`);
  const named = (hosts: string[], hints: Record<string, string>) => async () => {
    await http.post('/v1/scheduler/filter', { project_id: 'p1', hosts, hints }, [200]);
  };
  const hint = { reservation: '00000000-0000-0000-0000-000000000000' };
  await m('scheduler filter, 50 named hosts, hint', 200, named(names(50), hint));
  await m('scheduler filter, 1,000 named hosts', 100, named(names(1000), {}));
  await m('scheduler filter, every host named', 20, named(names(hosts), {}));
  await m('availability, 10 hosts for 2d', 50, () =>
    http.get('/v1/os-hosts/availability?count=10&duration=2d&limit=3'),
  );
  await m('availability, 5 gpu hosts for 7d', 50, () =>
    http.get(
      `/v1/os-hosts/availability?count=5&duration=7d&resource_properties=${encodeURIComponent(GPU)}`,
    ),
  );
  // The warm-up runs rebuild the hosts the creates above marked; the runs measured find none.
  const plan = () =>
    http.get('/v1/os-hosts/capacity?start=2035-01-01%2000:00&end=2036-01-01%2000:00&step=1d');
  await m('capacity plan, 1 year by day', 20, plan);
  // With a requirement the plan goes host by host (busy-counts.ts is for every host).
  await m('capacity plan, 1 year by day, gpu hosts', 20, () =>
    http.get(
      `/v1/os-hosts/capacity?start=2035-01-01%2000:00&end=2036-01-01%2000:00&step=1d&resource_properties=${encodeURIComponent(GPU)}`,
    ),
  );
  // What the web page asks: 150 steps of whole minutes from any minute, cut into hours.
  await m('capacity plan, 30 days in 150 steps from 10:37', 20, () =>
    http.get('/v1/os-hosts/capacity?start=2035-03-10%2010:37&end=2035-04-09%2010:37&step=288m'),
  );
  // What a create leaves the next plan: its host marked (the INSERT is the bench's).
  await m('capacity plan, 1 year by day, a host changed', 20, async (i) => {
    await ds.query(`INSERT INTO host_busy_changes (host_id) VALUES ($1)`, [1 + (i % hosts)]);
    await plan();
    return 1;
  });
  // What the first plan or maintenance after the HostBusy migration does.
  await m('host_busy rebuild, every host', 3, async () => {
    await ds.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
    await refreshHostBusy(ds.manager);
    return 1;
  });
  await m('lease list, limit 100', 100, () => http.get('/v1/leases?limit=100'));
  // A Prometheus scrape (the power plan's gauges are in the power rows, with it on).
  await m('GET /metrics', 50, () => http.get('/metrics'));
  return figures;
}
