/**
 * The capacity plan and the availability search without a requirement read host_busy's
 * counts (src/pools/busy-counts.ts): they must answer exactly as the host-by-host code
 * and the straightforward SQL do, after every kind of change the counts must follow.
 * A seeded random run of creates, updates and deletes of host and instance leases, hosts
 * added, removed, made unreservable and moved to the shared pool and back, and
 * allocations edited in SQL; after each round, the counts are checked against host_busy
 * and the answers against the other two. Then each way a change reaches the counts is
 * switched off in turn, to show that these checks notice it.
 */
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { formatWireDate } from '../src/common/dates.js';
import { planByHost } from '../src/pools/capacity-plan.js';
import { freeAtStarts, planFromCounts } from '../src/pools/host-busy-counts.js';
import { FreeStarts } from '../src/pools/free-starts.js';
import { refreshHostBusy } from '../src/pools/host-busy.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { expectedCapacity, IN_POOL, USAGE } from './support/capacity.js';
import { addHosts, hostReservation, names, slotReservation } from './support/hosts.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const BASE = Date.parse('2041-03-01T00:00:00Z');
const CLEANING_MINUTES = 30;
const EVERY_HOST = { where: 'TRUE', params: [] };
const LAST_START = new Date('9000-01-01T00:00:00Z');

/** Plans asked after each round: aligned on days, on hours, and on neither. */
const PLANS = [
  { start: BASE, end: BASE + 30 * DAY, step: DAY },
  { start: BASE + 3 * HOUR, end: BASE + 6 * DAY + 3 * HOUR, step: 6 * HOUR },
  { start: BASE + 37 * MINUTE, end: BASE + 4 * DAY + 11 * MINUTE, step: 7 * HOUR },
  // Every hour cut late (read after the point) and early (before it).
  { start: BASE + 50 * MINUTE, end: BASE + 12 * DAY + 50 * MINUTE, step: HOUR },
  { start: BASE + 3 * DAY + 10 * MINUTE, end: BASE + 15 * DAY + 10 * MINUTE, step: HOUR },
  { start: BASE + 2 * DAY + 13 * MINUTE, end: BASE + 2 * DAY + 4 * HOUR, step: 90_000 },
  { start: BASE - 2 * DAY, end: BASE + 40 * DAY, step: 10 * DAY },
];

/** A small seeded generator (mulberry32), so a failing run can be replayed. */
function random(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** `YYYY-MM-DD HH:MM`, the API's input format (UTC). */
const input = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

describe('host_busy counts', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let ds: DataSource;
  const leases: string[] = [];
  let hostCount = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        PLUGINS: 'physical:host,virtual:instance',
        CLEANING_TIME_MINUTES: String(CLEANING_MINUTES),
      },
    });
    t.clock.set(new Date(BASE - DAY));
    ds = t.app.get(DataSource);
    client = await connect(db.url);
    await addHosts(t.http, names('bc', 10), () => ({ zone: 'bc' }));
    hostCount = 10;
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  const hostIds = async () =>
    (await client.query<{ id: number }>(`SELECT id FROM hosts ORDER BY id`)).rows.map((r) => r.id);

  /** One random change through the API (or in SQL); returns what it tried and whether it was done. */
  async function change(pick: (n: number) => number): Promise<[string, boolean]> {
    const ids = await hostIds();
    const host = ids[pick(ids.length)];
    // Half on the hour, half at any minute, so that points fall on both sides of them.
    const minutes = () => (pick(2) === 0 ? pick(60) * MINUTE : 0);
    const at = BASE + pick(30 * 24) * HOUR + minutes();
    const window = {
      start_date: input(at),
      end_date: input(at + (1 + pick(90)) * HOUR + minutes()),
    };
    const create = async (reservation: Record<string, unknown>) => {
      const res = await t.http
        .post('/v1/leases')
        .send({ name: `bc-${leases.length}`, ...window, reservations: [reservation] });
      if (res.status === 201) leases.push(res.body.lease.id);
      return res.status === 201;
    };
    const ok = (res: { status: number }) => res.status < 300;
    switch (pick(10)) {
      case 0:
      case 1:
        return ['host lease', await create(hostReservation({ min: 1, max: 1 + pick(3) }))];
      case 2:
        return ['instance lease', await create(slotReservation('bc', { amount: 1 + pick(4) }))];
      case 3: {
        const [id] = leases.splice(pick(leases.length), 1);
        return ['delete', id !== undefined && ok(await t.http.delete(`/v1/leases/${id}`))];
      }
      case 4: {
        const id = leases[pick(leases.length)];
        return [
          'update',
          id !== undefined && ok(await t.http.put(`/v1/leases/${id}`).send(window)),
        ];
      }
      case 5: {
        const pool = pick(3) === 0 ? 'freepool' : 'shared';
        return [pool, ok(await t.http.put(`/v1/os-hosts/${host}/pool`).send({ pool }))];
      }
      case 6: {
        const { rows } = await client.query(`SELECT reservable FROM hosts WHERE id = $1`, [host]);
        const reservable = !rows[0].reservable;
        const res = await t.http.put(`/v1/os-hosts/${host}`).send({ reservable });
        return [`reservable ${reservable}`, ok(res)];
      }
      case 7:
        await addHosts(t.http, [`bc-extra-${hostCount++}`], () => ({ zone: 'bc' }));
        return ['host added', true];
      case 8:
        return ['host removed', ok(await t.http.delete(`/v1/os-hosts/${host}`))];
      default: {
        // Shortened, or moved to another host, as healing and pool moves do.
        const shorten = pick(2) === 0;
        const { rowCount } = await client.query(
          shorten
            ? `UPDATE host_allocations
                  SET during = tstzrange(lower(during), lower(during) + (upper(during) - lower(during)) / 2)
                WHERE id = (SELECT id FROM host_allocations ORDER BY random() LIMIT 1)`
            : `UPDATE instance_allocations SET host_id = $1
                WHERE id = (SELECT id FROM instance_allocations i
                             WHERE NOT EXISTS (SELECT 1 FROM instance_allocations o
                                                WHERE o.reservation_id = i.reservation_id AND o.host_id = $1)
                             ORDER BY random() LIMIT 1)`,
          shorten ? [] : [host],
        );
        return [shorten ? 'shortened' : 'slot moved', rowCount === 1];
      }
    }
  }

  /** What is wrong with the counts, host_busy and the answers (nothing: an empty list). */
  async function problems(): Promise<string[]> {
    await refreshHostBusy(ds.manager);
    const found: string[] = [];
    const differ = async (what: string, query: string) => {
      const { rows } = await client.query(query);
      if (rows.length > 0) found.push(`${what}: ${JSON.stringify(rows.slice(0, 3))}`);
    };
    await differ(
      'host_busy against the allocations',
      `(SELECT host_id, lower(m) AS lo, upper(m) AS up FROM
          (SELECT host_id, unnest(range_agg(during)) AS m FROM ${USAGE} u GROUP BY host_id) s
        EXCEPT SELECT host_id, lo, up FROM host_busy)
       UNION ALL (SELECT host_id, lo, up FROM host_busy EXCEPT
        SELECT host_id, lower(m), upper(m) FROM
          (SELECT host_id, unnest(range_agg(during)) AS m FROM ${USAGE} u GROUP BY host_id) s)`,
    );
    const inPool = IN_POOL;
    await differ(
      'pool state',
      `SELECT h.id FROM hosts h LEFT JOIN host_busy_hosts p ON p.host_id = h.id
        WHERE p.in_pool IS DISTINCT FROM (${inPool})
       UNION ALL SELECT b.host_id FROM host_busy b JOIN hosts h ON h.id = b.host_id
        WHERE b.in_pool <> (${inPool})`,
    );
    await differ(
      'totals',
      `SELECT t.in_pool, t.hosts, count(h.id) FROM host_busy_totals t
         LEFT JOIN hosts h ON (${inPool}) = t.in_pool GROUP BY 1, 2 HAVING t.hosts <> count(h.id)`,
    );
    await differ(
      'counts',
      `WITH want AS (
         SELECT g.grain, date_bin(g.width, e.t, timestamptz '2000-01-01 00:00:00+00') AS t,
                sum(e.s) AS starts, sum(e.e) AS ends
           FROM (SELECT lo AS t, 1 AS s, 0 AS e FROM host_busy WHERE in_pool
                 UNION ALL SELECT up - interval '1 microsecond', 0, 1 FROM host_busy WHERE in_pool) e
          CROSS JOIN (VALUES ('day', interval '1 day'), ('hour', interval '1 hour')) g(grain, width)
          GROUP BY 1, 2)
       SELECT * FROM (SELECT grain, t, starts, ends FROM want
                      EXCEPT SELECT grain, t, starts, ends FROM host_busy_counts) a
       UNION ALL
       SELECT * FROM (SELECT grain, t, starts, ends FROM host_busy_counts WHERE starts <> 0 OR ends <> 0
                      EXCEPT SELECT grain, t, starts, ends FROM want) b`,
    );
    for (const p of PLANS) {
      const span = { start: new Date(p.start), end: new Date(p.end) };
      const counted = await planFromCounts(ds.manager, span, p.step);
      const byHost = await planByHost(ds.manager, EVERY_HOST, span, p.step);
      if (JSON.stringify(counted) !== JSON.stringify(byHost)) {
        found.push(`plan ${JSON.stringify(p)} against host by host`);
      }
      const url =
        `/v1/os-hosts/capacity?start=${encodeURIComponent(input(p.start))}` +
        `&end=${encodeURIComponent(input(p.end))}&step=${p.step / 1000}s`;
      const api = (await t.http.get(url).expect(200)).body.capacity;
      const plain = await expectedCapacity(client, 'true', p.start, p.end, p.step);
      if (JSON.stringify(api) !== JSON.stringify(plain)) {
        found.push(`plan ${JSON.stringify(p)} against the straightforward SQL`);
      }
    }
    const starts = t.app.get(FreeStarts);
    for (const [count, hours, from, limit] of [
      [1, 2, BASE, 5],
      [3, 24, BASE + 5 * DAY + 17 * MINUTE, 4],
      [6, 50, BASE + 2 * HOUR, 3],
      [8, 1, BASE + 9 * DAY + 45 * MINUTE, 5],
      [10, 72, BASE - DAY, 2],
    ]) {
      const url =
        `/v1/os-hosts/availability?count=${count}&duration=${hours}h&limit=${limit}` +
        `&start=${encodeURIComponent(input(from))}`;
      const api = (await t.http.get(url).expect(200)).body.availability;
      const durationMs = hours * HOUR + CLEANING_MINUTES * MINUTE;
      const byHost = await starts.byHost(
        ds.manager,
        EVERY_HOST,
        count,
        durationMs,
        new Date(from),
        limit,
      );
      const want = byHost.map((s) => ({
        start_date: formatWireDate(s.start),
        end_date: formatWireDate(new Date(s.start.getTime() + hours * HOUR)),
        free_hosts: s.free,
      }));
      if (JSON.stringify(api) !== JSON.stringify(want)) {
        found.push(`availability ${count} for ${hours}h from ${input(from)} against host by host`);
      }
      // The counted frees themselves, fallback or not: each candidate recounted host by host.
      const counted = await freeAtStarts(ds.manager, new Date(from), durationMs, LAST_START, 12);
      const { rows } = await client.query<{ start: Date; free: number }>(
        `WITH candidates AS (
           SELECT $1::timestamptz AS c
           UNION (SELECT DISTINCT upper(u.during) FROM ${USAGE} u JOIN hosts h ON h.id = u.host_id
                   WHERE ${IN_POOL} AND upper(u.during) > $1 ORDER BY 1 LIMIT 11))
         SELECT c AS start, (SELECT count(*) FROM hosts h WHERE ${IN_POOL} AND NOT EXISTS (
                  SELECT 1 FROM ${USAGE} u WHERE u.host_id = h.id
                     AND u.during && tstzrange(c, c + $2::interval)))::int AS free
           FROM candidates ORDER BY c`,
        [new Date(from), `${durationMs} milliseconds`],
      );
      if (JSON.stringify(counted.starts) !== JSON.stringify(rows)) {
        found.push(`free hosts for ${hours}h from ${input(from)} against the straightforward SQL`);
      }
    }
    return found;
  }

  it('should answer as host by host and the straightforward SQL after every kind of change', async () => {
    const pick = random(29_2026);
    const done = new Map<string, number>();
    for (let round = 0; round < 12; round++) {
      for (let i = 0; i < 8; i++) {
        const [what, ok] = await change(pick);
        if (ok) done.set(what, (done.get(what) ?? 0) + 1);
      }
      expect({ round, problems: await problems() }).toEqual({ round, problems: [] });
    }
    // Every kind of change was made at least once.
    expect([...done.keys()].sort()).toEqual([
      'delete',
      'freepool',
      'host added',
      'host lease',
      'host removed',
      'instance lease',
      'reservable false',
      'reservable true',
      'shared',
      'shortened',
      'slot moved',
      'update',
    ]);
  }, 600_000);

  it('should take each end once when many allocations end at the same time', async () => {
    const at = BASE + 40 * DAY;
    await addHosts(t.http, names('bc-same', 6), () => ({ zone: 'same' }));
    for (let i = 0; i < 2; i++) {
      for (const hours of [2, 3, 4]) {
        await t.http
          .post('/v1/leases')
          .send({
            name: `bc-same-${i}-${hours}`,
            start_date: input(at),
            end_date: input(at + hours * HOUR),
            reservations: [hostReservation({ resource_properties: '["==", "$zone", "same"]' })],
          })
          .expect(201);
      }
    }
    await refreshHostBusy(ds.manager);
    const counted = await freeAtStarts(ds.manager, new Date(at), HOUR, LAST_START, 4);
    const cleaning = CLEANING_MINUTES * MINUTE;
    expect(counted.starts.map((s) => s.start.getTime())).toEqual([
      at,
      at + 2 * HOUR + cleaning,
      at + 3 * HOUR + cleaning,
      at + 4 * HOUR + cleaning,
    ]);
    expect(await problems()).toEqual([]);
  }, 120_000);

  it.each([
    ['an allocation made', 'host_allocations', 'host_allocations_busy'],
    ['a host made unreservable', 'hosts', 'hosts_busy_update'],
    ['a host moved to the shared pool', 'aggregate_hosts', 'aggregate_hosts_busy_insert'],
    ['a host moved back from the shared pool', 'aggregate_hosts', 'aggregate_hosts_busy_delete'],
    ['a host added', 'hosts', 'hosts_busy_mark'],
  ])(
    'should notice when %s leaves the counts behind',
    async (_, table, trigger) => {
      const [host] = await addHosts(t.http, [`bc-stale-${trigger}`], () => ({ zone: 'bc' }));
      if (trigger === 'aggregate_hosts_busy_delete') {
        await t.http.put(`/v1/os-hosts/${host}/pool`).send({ pool: 'shared' }).expect(200);
      }
      expect(await problems()).toEqual([]);
      await client.query(`ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`);
      try {
        if (trigger === 'host_allocations_busy') {
          await t.http
            .post('/v1/leases')
            .send({
              name: 'bc-stale',
              start_date: input(BASE + DAY),
              end_date: input(BASE + 3 * DAY),
              reservations: [hostReservation({ hypervisor_properties: `["==", "$id", ${host}]` })],
            })
            .expect(201);
        } else if (trigger === 'hosts_busy_update') {
          await t.http.put(`/v1/os-hosts/${host}`).send({ reservable: false }).expect(200);
        } else if (trigger === 'hosts_busy_mark') {
          await addHosts(t.http, ['bc-stale-added'], () => ({ zone: 'bc' }));
        } else {
          const pool = trigger === 'aggregate_hosts_busy_insert' ? 'shared' : 'freepool';
          await t.http.put(`/v1/os-hosts/${host}/pool`).send({ pool }).expect(200);
        }
        expect((await problems()).length).toBeGreaterThan(0);
      } finally {
        await client.query(`ALTER TABLE ${table} ENABLE TRIGGER ${trigger}`);
      }
      // Marked again, the host is brought up to date.
      await client.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
      expect(await problems()).toEqual([]);
    },
    120_000,
  );
});
