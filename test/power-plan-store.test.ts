import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { seed } from '../bench/seed.js';
import { FakeClock } from '../src/common/clock.js';
import { formatWireDate } from '../src/common/dates.js';
import { planHost } from '../src/power/power-plan.js';
import { PowerRepository } from '../src/power/power.repository.js';
import { powerSettings, situationOf } from '../src/power/situations.js';
import { decisionHorizonMs } from '../src/power/stored-plan.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { startApp, type TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { MINUTE, runFor, step } from './support/power.js';

jest.setTimeout(240_000);

const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const START = new Date('2035-01-01T00:00:00Z');
const ENV = {
  PLUGINS: 'physical:host',
  POWER_PLAN: 'on',
  POWER_OFF_IDLE_MINUTES: '60',
  POWER_BOOT_SECONDS: '600',
  PROVISIONING_LEAD_MINUTES: '10',
};

interface Entry {
  id: string;
  hypervisor_hostname: string;
  power_state: string;
  always_on: boolean;
  holds_servers: boolean;
  in_plan: boolean;
  transitions: { at: string; to: 'on' | 'off' }[];
}

interface Reference {
  figures: Record<string, unknown>;
  hosts: Entry[];
  acts: Record<string, string>;
}

const hours = (ms: number) => Math.round((ms / HOUR) * 100) / 100;

/**
 * The old full computation: every host planned from every allocation from now on (the
 * planner itself), and the past 30 days summed from the whole log, as the report did
 * before the plan was kept.
 */
async function reference(t: TestApp, client: Client): Promise<Reference> {
  const now = t.clock.now();
  const em = t.app.get(DataSource).manager;
  const repo = t.app.get(PowerRepository);
  const s = powerSettings(t.config);
  const planOn = t.config.power.plan;
  const hosts = await repo.hosts(em);
  const usage = await repo.usage(em, now, new Date('9999-01-01T00:00:00Z'));
  const until = now.getTime() + 30 * DAY;
  let next = 0;
  const states: Record<string, number> = { on: 0, off: 0, booting: 0, stopping: 0 };
  const acts: Record<string, string> = {};
  const entries = hosts.map((host): Entry => {
    const situation = situationOf(host, usage, planOn);
    const plan = planHost(situation, now.getTime(), until, s);
    next += plan.offMs;
    states[host.state]++;
    const own = situationOf(host, usage, planOn, true);
    const want = planHost(own, now.getTime(), now.getTime() + decisionHorizonMs(s), s).want;
    if (want === 'on' && host.state === 'off') acts[host.hostId] = 'on';
    if (want === 'off' && host.state === 'on') acts[host.hostId] = 'off';
    return {
      id: String(host.hostId),
      hypervisor_hostname: host.name,
      power_state: host.state,
      always_on: host.alwaysOn,
      holds_servers: host.holdsServers,
      in_plan: !situation.keepOn,
      transitions: plan.transitions.map((tr) => ({
        at: formatWireDate(new Date(tr.at)),
        to: tr.to,
      })),
    };
  });
  const { rows } = await client.query<{ ms: string | null }>(
    `WITH log AS (
       SELECT host_id, state, at,
              coalesce(lead(at) OVER (PARTITION BY host_id ORDER BY at, id), $2) AS until
         FROM power_log WHERE at < $2)
     SELECT sum(extract(epoch FROM least(until, $2) - greatest(at, $1)) * 1000) AS ms
       FROM log WHERE state = 'off' AND until > $1`,
    [new Date(now.getTime() - 30 * DAY), now],
  );
  return {
    figures: {
      enabled: planOn,
      off_idle_minutes: t.config.power.offIdleMinutes,
      boot_seconds: t.config.power.bootSeconds,
      provisioning_lead_minutes: t.config.provisioningLeadMinutes,
      host_hours_off: { past_30_days: hours(Number(rows[0].ms ?? 0)), next_30_days: hours(next) },
      power_states: states,
    },
    hosts: entries,
    acts,
  };
}

/** Every page of `query`, following `next`; each page's figures must be the same. */
async function allPages(t: TestApp, query: string): Promise<{ figures: unknown; hosts: Entry[] }> {
  let path: string | undefined = `/v1/power-plan?${query}`;
  const hosts: Entry[] = [];
  let figures: unknown = undefined;
  for (let pages = 0; path !== undefined; pages++) {
    expect(pages).toBeLessThan(100);
    const res = await t.http.get(path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    const body = res.body;
    const { hosts: page, next, ...rest } = body;
    if (figures === undefined) figures = rest;
    else expect(rest).toEqual(figures);
    hosts.push(...page);
    path = next;
  }
  return { figures, hosts };
}

const wire = (ms: number) => formatWireDate(new Date(ms));
/** An input date (minutes, UTC). */
const input = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
const asWire = (value: string) => formatWireDate(new Date(`${value.replace(' ', 'T')}:00Z`));

/** The reference's hosts that a filter selects, as the API documents the filters. */
function selected(ref: Reference, now: Date, filter: Record<string, string>): Entry[] {
  const from = filter.start === undefined ? wire(now.getTime()) : asWire(filter.start);
  const until = filter.end === undefined ? wire(now.getTime() + 30 * DAY) : asWire(filter.end);
  return ref.hosts.filter(
    (h) =>
      (filter.power_state === undefined || h.power_state === filter.power_state) &&
      (filter.in_plan === undefined || String(h.in_plan) === filter.in_plan) &&
      (filter.to === undefined && filter.start === undefined
        ? true
        : h.transitions.some(
            (tr) =>
              (filter.to === undefined || tr.to === filter.to) && tr.at >= from && tr.at < until,
          )),
  );
}

describe('the power plan kept as it changes, against the full computation', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  const driver = new MemoryDriver();
  const clock = new FakeClock(START);

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, driver, clock, env: ENV });
    client = await connect(db.url);
    // 120 hosts, an allocation of 1-3 days a month each, over the year from START.
    await seed(t.app.get(DataSource), 120, 12, START, undefined, 'blazar');
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  /** The report, all pages and some filters, and the manager's candidates, as the reference. */
  async function expectSame(app: TestApp = t): Promise<void> {
    const all = await allPages(app, 'limit=37');
    const ref = await reference(app, client);
    expect(all.figures).toEqual(ref.figures);
    expect(all.hosts).toEqual(ref.hosts);
    const { rows } = await client.query<{ host_id: number; act: string }>(
      `SELECT host_id, act FROM power_plan WHERE act IS NOT NULL`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.host_id, r.act]))).toEqual(ref.acts);
    const now = app.clock.now();
    const filters: Record<string, string>[] = [
      { power_state: 'off' },
      { in_plan: 'false' },
      { to: 'on' },
      { to: 'off', start: input(now.getTime() + DAY), end: input(now.getTime() + 5 * DAY) },
      { start: input(now.getTime() + 10 * DAY) },
    ];
    for (const filter of filters) {
      const query = new URLSearchParams({ ...filter, limit: '25' }).toString();
      const got = (await allPages(app, query)).hosts.map((h) => h.id);
      expect([query, got]).toEqual([query, selected(ref, now, filter).map((h) => h.id)]);
    }
  }

  it('should answer as the full computation after the first run and as hosts go off', async () => {
    await step(t);
    await expectSame();
    // Idle hosts go off once on for an hour (their record starts at the first run).
    await runFor(t, 63);
    expect(driver.poweredOff.size).toBeGreaterThan(20);
    await expectSame();
  });

  it('should answer 100 hosts and a link to the next page without parameters', async () => {
    const first = (await t.http.get('/v1/power-plan').expect(200)).body;
    expect(first.hosts).toHaveLength(100);
    expect(first.next).toBe('/v1/power-plan?limit=100&marker=100');
    const rest = (await t.http.get(first.next).expect(200)).body;
    expect(rest.hosts.map((h: Entry) => h.id)).toEqual(
      Array.from({ length: 20 }, (_, i) => String(101 + i)),
    );
    expect(rest).not.toHaveProperty('next');
    const filtered = (await t.http.get('/v1/power-plan?power_state=off&limit=2').expect(200)).body;
    expect(filtered.next).toBe(
      `/v1/power-plan?power_state=off&limit=2&marker=${filtered.hosts[1].id}`,
    );
    const one = (await t.http.get('/v1/power-plan?host=bench-000007').expect(200)).body;
    expect(one.hosts.map((h: Entry) => h.id)).toEqual(['7']);
    for (const bad of [
      'limit=0',
      'limit=1001',
      'marker=abc',
      'power_state=asleep',
      'in_plan=maybe',
      'to=up',
      'start=tomorrow',
    ]) {
      const res = await t.http.get(`/v1/power-plan?${bad}`);
      expect([bad, res.status, res.body.error_code]).toEqual([bad, 400, 400]);
    }
    // Unknown keys are ignored, as on every list (and not carried to the next page).
    const unknown = (await t.http.get('/v1/power-plan?colour=red&limit=1').expect(200)).body;
    expect(unknown.next).toBe('/v1/power-plan?limit=1&marker=1');
  });

  it('should follow leases created, moved and deleted, with no manager run between', async () => {
    const soon = (m: number) => new Date(clock.now().getTime() + m * MINUTE).toISOString();
    const made: string[] = [];
    // Any free host (the seed's allocations are random): the soonest one may need a boot.
    for (const [from, to] of [
      [20, 200],
      [24 * 60, 26 * 60],
      [3 * 24 * 60, 4 * 24 * 60],
    ] as const) {
      const res = await t.http
        .post('/v1/leases')
        .send({
          name: `change-${from}`,
          start_date: soon(from),
          end_date: soon(to),
          reservations: [hostReservation()],
        })
        .expect(201);
      made.push(res.body.lease.id);
    }
    await expectSame();
    await t.http
      .put(`/v1/leases/${made[1]}`)
      .send({ end_date: new Date(clock.now().getTime() + 40 * HOUR).toISOString() })
      .expect(200);
    await t.http.delete(`/v1/leases/${made[2]}`).expect(204);
    const { rows } = await client.query<{ id: string }>(
      `SELECT l.id FROM leases l JOIN reservations r ON r.lease_id = l.id
         JOIN host_allocations a ON a.reservation_id = r.id
        WHERE l.name = 'bench' AND l.start_at > $1 ORDER BY l.start_at LIMIT 1`,
      [clock.now()],
    );
    await t.http.delete(`/v1/leases/${rows[0].id}`).expect(204);
    await expectSame();
  });

  it('should follow pools, reservable flags, marks, servers and hosts added or deleted', async () => {
    await t.http.put('/v1/os-hosts/11/pool').send({ pool: 'shared' }).expect(200);
    await t.http.put('/v1/os-hosts/12').send({ reservable: false }).expect(200);
    await t.http.put('/v1/os-hosts/13/power').send({ always_on: true }).expect(200);
    await expectSame();
    // Changes made in the database alone, to hosts off and planned off (kept on from now).
    const off = await client.query<{ host_id: number }>(
      `SELECT host_id FROM power_plan WHERE state = 'off' AND want = 'off' AND recheck_at > $1
        ORDER BY host_id LIMIT 2`,
      [clock.now()],
    );
    expect(off.rows).toHaveLength(2);
    const [first, second] = off.rows.map((r) => r.host_id);
    await client.query(`UPDATE hosts SET reservable = false WHERE id = $1`, [first]);
    await client.query(`UPDATE host_power SET holds_servers = true WHERE host_id = $1`, [second]);
    await expectSame();
    // Servers found on the next hosts the manager wants off: kept on, reported so.
    driver.servers.set('bench-000014', [
      { id: 's', name: 's', projectId: 'p', preemptible: false },
    ]);
    const [added, removed] = await addHosts(t.http, ['new-1', 'new-2']);
    await expectSame();
    await t.http.delete(`/v1/os-hosts/${removed}`).expect(204);
    await runFor(t, 3);
    await t.http.put('/v1/os-hosts/11/pool').send({ pool: 'freepool' }).expect(200);
    expect(added).toBeDefined();
    await expectSame();
  });

  it('should follow the clock alone: boots due, idle stretches ending, a day and more on', async () => {
    for (const minutes of [45, 7 * 60, 26 * 60, 3 * 24 * 60]) {
      clock.advance(minutes * MINUTE);
      await expectSame();
    }
    await runFor(t, 30, 5);
    await expectSame();
  });

  it('should compute everything again when another replica plans with other settings', async () => {
    const other = await startApp({
      databaseUrl: db.url,
      driver,
      clock,
      env: { ...ENV, POWER_OFF_IDLE_MINUTES: '30', PROVISIONING_LEAD_MINUTES: '0' },
    });
    try {
      await expectSame(other);
    } finally {
      await other.close();
    }
    await expectSame();
  });

  it('should keep the past 30 days right as the log is pruned', async () => {
    const [newOne] = (await allPages(t, 'host=new-1')).hosts;
    for (let day = 0; day < 33; day++) {
      // A day on, then a few runs a minute apart (at most 10 transitions a minute).
      clock.advance(DAY - 3 * MINUTE);
      await runFor(t, 3);
      // new-1 on for two days: it has two off spans in the last 30 days.
      if (day === 10 || day === 12) {
        const mark = { always_on: day === 10 };
        await t.http.put(`/v1/os-hosts/${newOne.id}/power`).send(mark).expect(200);
      }
      await step(t);
    }
    await expectSame();
    // A host that has been off, deleted: its hours go with it (as its log does).
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM power_off_spans WHERE host_id = $1`,
      [newOne.id],
    );
    expect(rows[0].n).toBeGreaterThanOrEqual(2);
    await t.http.delete(`/v1/os-hosts/${newOne.id}`).expect(204);
    await expectSame();
  });
});
