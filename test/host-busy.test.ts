/**
 * host_busy, what the capacity plan reads, against the allocations it summarises: under
 * creates, deletes and plans racing on two replicas; one refresh at a time; drained by the
 * manager's maintenance.
 */
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { Metrics } from '../src/observability/metrics.js';
import { Maintenance } from '../src/events/maintenance.service.js';
import { REFRESH_LOCK, refreshHostBusy } from '../src/pools/host-busy.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { expectedCapacity, USAGE } from './support/capacity.js';
import { addHosts, hostReservation, names } from './support/hosts.js';

const PLAN = '/v1/os-hosts/capacity?start=2032-03-01%2000:00&end=2032-03-15%2000:00&step=6h';
const PLAN_SPAN = [Date.parse('2032-03-01T00:00:00Z'), Date.parse('2032-03-15T00:00:00Z')];

describe('host_busy', () => {
  let db: TestDatabase;
  let apps: TestApp[] = [];
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { PLUGINS: 'physical:host,virtual:instance' };
    const first = await startApp({ databaseUrl: db.url, env });
    apps = [first, await startApp({ databaseUrl: db.url, env, clock: first.clock })];
    first.clock.set(new Date('2032-01-01T00:00:00Z'));
    await addHosts(first.http, names('hb', 8));
    client = await connect(db.url);
  });
  afterAll(async () => {
    await client?.end();
    for (const app of apps) await app.close();
    await db?.drop();
  });

  /** host_busy as rows, and the allocations merged per host from scratch. */
  async function busyAndMerged() {
    const busy = await client.query(
      `SELECT host_id, lo, up, prev_end FROM host_busy ORDER BY host_id, lo`,
    );
    const merged = await client.query(
      `SELECT host_id, lower(m) AS lo, upper(m) AS up,
              lag(upper(m)) OVER (PARTITION BY host_id ORDER BY lower(m)) AS prev_end
         FROM (SELECT host_id, unnest(range_agg(during)) AS m FROM ${USAGE} u GROUP BY host_id) s
        ORDER BY host_id, lo`,
    );
    return { busy: busy.rows, merged: merged.rows };
  }

  const marked = async () =>
    Number((await client.query(`SELECT count(*) FROM host_busy_changes`)).rows[0].count);

  it('should plan what the allocations say while creates, deletes and plans race on two replicas', async () => {
    const day = (d: number) => `2032-03-${String(d).padStart(2, '0')}`;
    const creates = Array.from({ length: 40 }, (_, i) =>
      apps[i % 2].http.post('/v1/leases').send({
        name: `hb-${i}`,
        start_date: `${day(1 + (i % 12))} ${String(i % 24).padStart(2, '0')}:00`,
        end_date: `${day(2 + (i % 12) + (i % 3))} 06:00`,
        reservations: [hostReservation({ min: 1, max: 1 + (i % 2) })],
      }),
    );
    const plans = Array.from({ length: 12 }, (_, i) => apps[i % 2].http.get(PLAN));
    const results = await Promise.all([...creates, ...plans]);
    const created = results.slice(0, 40);
    expect(created.filter((r) => r.status === 201).length).toBeGreaterThan(10);
    for (const r of created) expect([201, 409]).toContain(r.status);
    for (const r of results.slice(40)) expect(r.status).toBe(200);

    // Half the leases deleted while plans run.
    const ids = created.filter((r) => r.status === 201).map((r) => r.body.lease.id as string);
    const more = await Promise.all([
      ...ids
        .filter((_, i) => i % 2 === 0)
        .map((id, i) => apps[i % 2].http.delete(`/v1/leases/${id}`)),
      ...Array.from({ length: 6 }, (_, i) => apps[i % 2].http.get(PLAN)),
    ]);
    for (const r of more) expect([200, 204]).toContain(r.status);

    const plan = await apps[1].http.get(PLAN).expect(200);
    expect(plan.body.capacity).toEqual(
      await expectedCapacity(client, 'true', PLAN_SPAN[0], PLAN_SPAN[1], 6 * 3_600_000),
    );
    expect(plan.body.capacity.some((s: { reserved: number }) => s.reserved > 0)).toBe(true);
    const { busy, merged } = await busyAndMerged();
    expect(busy).toEqual(merged);
    expect(await marked()).toBe(0);
  });

  it('should wait for a refresh under way before starting its own', async () => {
    await client.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
    const holder = await connect(db.url);
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock($1)`, [REFRESH_LOCK]);
      let done = false;
      const refresh = refreshHostBusy(apps[0].app.get(DataSource).manager).then((n) => {
        done = true;
        return n;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(done).toBe(false);
      await holder.query('COMMIT');
      expect(await refresh).toBe(8);
    } finally {
      await holder.end();
    }
    expect(await marked()).toBe(0);
  });

  it('should rebuild the marked hosts when the manager runs its maintenance', async () => {
    // The summary gone (its counts with it), every host marked.
    await client.query(
      `DELETE FROM host_busy; DELETE FROM host_busy_counts; DELETE FROM host_busy_hosts;
       UPDATE host_busy_totals SET hosts = 0`,
    );
    await client.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
    await apps[0].app.get(Maintenance).run();
    expect(await marked()).toBe(0);
    const { busy, merged } = await busyAndMerged();
    expect(busy.length).toBeGreaterThan(0);
    expect(busy).toEqual(merged);
  });

  it('should go on with the rest of the maintenance when the refresh fails', async () => {
    const runs = async (result: string) =>
      (await apps[0].app.get(Metrics).maintenanceRuns.get()).values.find(
        (v) => v.labels.result === result,
      )?.value ?? 0;
    const [ok, failed] = [await runs('ok'), await runs('failed')];
    await client.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
    await client.query(`ALTER TABLE host_busy RENAME TO host_busy_away`);
    try {
      await apps[0].app.get(Maintenance).run();
    } finally {
      await client.query(`ALTER TABLE host_busy_away RENAME TO host_busy`);
    }
    expect([await runs('ok'), await runs('failed')]).toEqual([ok + 1, failed]);
    // The marks stayed for the next refresh, which brings host_busy back.
    expect(await marked()).toBeGreaterThan(0);
    await apps[0].app.get(Maintenance).run();
    expect(await marked()).toBe(0);
    const { busy, merged } = await busyAndMerged();
    expect(busy).toEqual(merged);
  });
});
