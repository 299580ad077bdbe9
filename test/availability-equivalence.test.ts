/**
 * The availability search and the capacity plan answer as the straightforward SQL does:
 * one count of free hosts per candidate start, one count of reserved hosts per step.
 * Random fleets (reservable or not, shared or not, capabilities), whole-host allocations
 * (never overlapping on a host, as the exclusion constraint has it), instance slots
 * (overlapping anything), windows, steps and requirement filters, on real PostgreSQL;
 * then the benchmark's own data and queries.
 */
import fc from 'fast-check';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { seed } from '../bench/seed.js';
import { formatWireDate } from '../src/common/dates.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { expectedCapacity, IN_POOL, USAGE } from './support/capacity.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const BASE = Date.parse('2040-01-01T00:00:00Z');
const CLEANING_MINUTES = 60;

/** A requirement as the API takes it, and the same as plain SQL over `h`. */
const FILTERS = [
  { query: '', sql: 'true' },
  { query: 'resource_properties=["==", "$gpu", "True"]', sql: `h.capabilities ->> 'gpu' = 'True'` },
  { query: 'resource_properties=["==", "$rack", "r1"]', sql: `h.capabilities ->> 'rack' = 'r1'` },
  { query: 'hypervisor_properties=[">=", "$vcpus", 32]', sql: 'h.vcpus >= 32' },
  {
    query: 'hypervisor_properties=[">=", "$vcpus", 32]&resource_properties=["==", "$gpu", "False"]',
    sql: `h.vcpus >= 32 AND h.capabilities ->> 'gpu' = 'False'`,
  },
];

interface HostSpec {
  reservable: boolean;
  shared: boolean;
  gpu: boolean;
  rack: string;
  vcpus: number;
  /** Whole-host allocations, as [start, end) in minutes after BASE; laid end to end. */
  gaps: { gap: number; length: number }[];
  /** Instance slots, as [start, start + length) minutes after BASE; may overlap. */
  slots: { start: number; length: number }[];
}

/** Times mostly on the hour, so bounds meet steps, windows and each other exactly. */
const minutes = (max: number) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: Math.floor(max / 60) }).map((h) => h * 60) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: Math.floor(max / 30) }).map((h) => h * 30) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max }) },
  );

const hostSpec: fc.Arbitrary<HostSpec> = fc.record({
  reservable: fc.integer({ min: 0, max: 6 }).map((n) => n !== 0),
  shared: fc.integer({ min: 0, max: 6 }).map((n) => n === 0),
  gpu: fc.boolean(),
  rack: fc.constantFrom('r0', 'r1'),
  vcpus: fc.constantFrom(16, 32),
  gaps: fc.array(fc.record({ gap: minutes(1500), length: minutes(1500).map((m) => m + 1) }), {
    maxLength: 8,
  }),
  slots: fc.array(fc.record({ start: minutes(6000), length: minutes(1500).map((m) => m + 1) }), {
    maxLength: 2,
  }),
});

const availabilityQuery = fc.record({
  filter: fc.integer({ min: 0, max: FILTERS.length - 1 }),
  count: fc.integer({ min: 1, max: 7 }),
  duration: fc.constantFrom('30m', '1h', '2h', '5h', '1d', '3d'),
  limit: fc.integer({ min: 1, max: 6 }),
  start: minutes(7000).map((m) => m - 600),
});

const capacityQuery = fc.record({
  filter: fc.integer({ min: 0, max: FILTERS.length - 1 }),
  step: fc.constantFrom('90s', '30m', '1h', '7h', '1d'),
  steps: fc.integer({ min: 1, max: 40 }),
  extra: fc.constantFrom(0, 0, 17),
  start: minutes(7000).map((m) => m - 600),
});

/** How many allocations (taken by random id) to delete, to halve and to move. */
const edits = fc.record({
  drop: fc.integer({ min: 0, max: 3 }),
  shorten: fc.integer({ min: 0, max: 3 }),
  move: fc.integer({ min: 0, max: 2 }),
});

const STEP_MS: Record<string, number> = {
  '90s': 90_000,
  '30m': 30 * MINUTE,
  '1h': HOUR,
  '2h': 2 * HOUR,
  '5h': 5 * HOUR,
  '7h': 7 * HOUR,
  '1d': 24 * HOUR,
  '3d': 72 * HOUR,
};

/** `YYYY-MM-DD HH:MM`, the API's input format (UTC). */
const input = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

describe('availability and capacity plan against the straightforward SQL', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host', CLEANING_TIME_MINUTES: String(CLEANING_MINUTES) },
    });
    client = await connect(db.url);
    await client.query(
      `INSERT INTO resource_properties (resource_type, property_name, private, created_at)
       VALUES ('physical:host', 'rack', false, now()), ('physical:host', 'gpu', false, now())
       ON CONFLICT DO NOTHING`,
    );
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  /** Replaces the fleet and its allocations with `hosts`. */
  async function load(hosts: HostSpec[]): Promise<void> {
    await client.query(`TRUNCATE hosts, leases CASCADE`);
    await client.query(
      `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, created_at)
       VALUES ('00000000-0000-4000-8000-000000000000', 'eq', 'p', 'u', $1, $2, 'PENDING', now())`,
      [new Date(BASE), new Date(BASE + 1000 * HOUR)],
    );
    for (const [i, h] of hosts.entries()) {
      const { rows } = await client.query<{ id: number }>(
        `INSERT INTO hosts (hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
                            hypervisor_version, cpu_info, availability_zone, reservable, capabilities, created_at)
         VALUES ($1, $1, $2, 1024, 10, 'QEMU', 1, '', 'nova', $3, $4, now()) RETURNING id`,
        [`eq-${i}`, h.vcpus, h.reservable, { gpu: h.gpu ? 'True' : 'False', rack: h.rack }],
      );
      const id = rows[0].id;
      await client.query(
        `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
         SELECT a.id, $1, a.kind, now() FROM aggregates a WHERE a.name = $2`,
        [id, h.shared ? 'shared' : 'freepool'],
      );
      let at = 0;
      const spans: [number, number, string][] = [];
      for (const { gap, length } of h.gaps) {
        spans.push([at + gap, at + gap + length, 'host']);
        at += gap + length;
      }
      for (const { start, length } of h.slots) spans.push([start, start + length, 'slot']);
      for (const [start, end, kind] of spans) {
        const reservation = await client.query<{ id: string }>(
          `INSERT INTO reservations (id, lease_id, resource_type, status, created_at)
           VALUES (gen_random_uuid(), '00000000-0000-4000-8000-000000000000', $1, 'pending', now())
           RETURNING id`,
          [kind === 'host' ? 'physical:host' : 'virtual:instance'],
        );
        const during = [new Date(BASE + start * MINUTE), new Date(BASE + end * MINUTE)];
        await client.query(
          kind === 'host'
            ? `INSERT INTO host_allocations (id, reservation_id, host_id, during)
               VALUES (gen_random_uuid(), $1, $2, tstzrange($3, $4, '[)'))`
            : `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
               VALUES (gen_random_uuid(), $1, $2, 1, 1, 1, 0, tstzrange($3, $4, '[)'))`,
          [reservation.rows[0].id, id, ...during],
        );
      }
    }
  }

  /**
   * Deletes `drop` whole-host allocations and slots, cuts `shorten` whole-host ones to
   * half their length (never an overlap) and moves `move` slots to the first host.
   */
  async function edit(e: { drop: number; shorten: number; move: number }): Promise<void> {
    for (const table of ['host_allocations', 'instance_allocations']) {
      await client.query(
        `DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} ORDER BY id LIMIT $1)`,
        [e.drop],
      );
    }
    await client.query(
      `UPDATE host_allocations
          SET during = tstzrange(lower(during), lower(during) + (upper(during) - lower(during)) / 2)
        WHERE id IN (SELECT id FROM host_allocations ORDER BY id DESC LIMIT $1)`,
      [e.shorten],
    );
    await client.query(
      `UPDATE instance_allocations SET host_id = (SELECT min(id) FROM hosts)
        WHERE id IN (SELECT id FROM instance_allocations ORDER BY id DESC LIMIT $1)`,
      [e.move],
    );
  }

  /** Every candidate start (from and each later end on a matching host) counted one by one. */
  async function expectedAvailability(
    where: string,
    from: Date,
    durationMs: number,
    count: number,
    limit: number,
  ) {
    const cleaningMs = CLEANING_MINUTES * MINUTE;
    // The candidates in time order, each counted only until `limit` of them fit.
    const { rows } = await client.query<{ t: Date; free: string }>(
      `WITH matching AS MATERIALIZED (SELECT h.id FROM hosts h WHERE ${IN_POOL} AND (${where})),
            candidates AS MATERIALIZED (
              SELECT t FROM (SELECT $1::timestamptz AS t
                             UNION SELECT upper(u.during) FROM ${USAGE} u JOIN matching m ON m.id = u.host_id
                              WHERE upper(u.during) > $1) c ORDER BY t)
       SELECT c.t, f.free FROM candidates c CROSS JOIN LATERAL (
         SELECT count(*) AS free FROM matching m WHERE NOT EXISTS (
           SELECT 1 FROM ${USAGE} u WHERE u.host_id = m.id
              AND u.during && tstzrange(c.t, c.t + $2::interval, '[)'))) f
        WHERE f.free >= $3 LIMIT $4`,
      [from, `${durationMs + cleaningMs} milliseconds`, count, limit],
    );
    return rows.map((r) => ({
      start_date: formatWireDate(r.t),
      end_date: formatWireDate(new Date(r.t.getTime() + durationMs)),
      free_hosts: Number(r.free),
    }));
  }

  const withFilter = (url: string, filter: number) =>
    FILTERS[filter].query ? `${url}&${FILTERS[filter].query}` : url;

  it('should find the same earliest windows and plan the same steps as the straightforward SQL on random fleets', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(hostSpec, { minLength: 1, maxLength: 7 }),
        availabilityQuery,
        capacityQuery,
        edits,
        async (hosts, a, c, e) => {
          await load(hosts);
          const from = BASE + a.start * MINUTE;
          const got = await t.http
            .get(
              withFilter(
                `/v1/os-hosts/availability?count=${a.count}&duration=${a.duration}&limit=${a.limit}` +
                  `&start=${encodeURIComponent(input(from))}`,
                a.filter,
              ),
            )
            .expect(200);
          expect(got.body.availability).toEqual(
            await expectedAvailability(
              FILTERS[a.filter].sql,
              new Date(from),
              STEP_MS[a.duration],
              a.count,
              a.limit,
            ),
          );

          const start = BASE + c.start * MINUTE;
          const stepMs = STEP_MS[c.step];
          // The API takes whole minutes: a plan of 90 s steps may end inside its last step.
          const end = Math.floor((start + c.steps * stepMs + c.extra * MINUTE) / MINUTE) * MINUTE;
          const planUrl = withFilter(
            `/v1/os-hosts/capacity?start=${encodeURIComponent(input(start))}` +
              `&end=${encodeURIComponent(input(end))}&step=${c.step}`,
            c.filter,
          );
          const plan = await t.http.get(planUrl).expect(200);
          expect(plan.body.capacity).toEqual(
            await expectedCapacity(client, FILTERS[c.filter].sql, start, end, stepMs),
          );

          // Allocations deleted, shortened and moved to another host after the first plan.
          await edit(e);
          const again = await t.http.get(planUrl).expect(200);
          expect(again.body.capacity).toEqual(
            await expectedCapacity(client, FILTERS[c.filter].sql, start, end, stepMs),
          );
        },
      ),
      { numRuns: 100, seed: 11_2026 },
    );
  }, 300_000);

  it.each(['today', 'blazar'] as const)(
    'should answer the benchmark queries as the straightforward SQL does on the %s bench data',
    async (shape) => {
      await load([]);
      const ds = t.app.get(DataSource);
      await seed(ds, 300, 10, new Date('2035-01-01T00:00:00Z'), () => undefined, shape);
      const gpu = FILTERS[1];
      for (const [count, duration, limit, filter] of [
        [10, '2d', 3, 0],
        [5, '7d', 5, 1],
        [285, '1d', 2, 0],
        [30, '3d', 4, 1],
        [31, '1d', 2, 1],
      ] as const) {
        const got = await t.http
          .get(
            withFilter(
              `/v1/os-hosts/availability?count=${count}&duration=${duration}&limit=${limit}` +
                `&start=2035-01-01%2000:00`,
              filter,
            ),
          )
          .expect(200);
        const expected = await expectedAvailability(
          FILTERS[filter].sql,
          new Date('2035-01-01T00:00:00Z'),
          Number(duration[0]) * 24 * HOUR,
          count,
          limit,
        );
        expect(got.body.availability).toEqual(expected);
        expect(expected.length).toBe(count > 30 && filter === 1 ? 0 : limit);
      }
      const year = [Date.parse('2035-01-01T00:00:00Z'), Date.parse('2036-01-01T00:00:00Z')];
      for (const filter of [FILTERS[0], gpu]) {
        const plan = await t.http
          .get(
            `/v1/os-hosts/capacity?start=2035-01-01%2000:00&end=2036-01-01%2000:00&step=1d` +
              (filter.query ? `&${filter.query}` : ''),
          )
          .expect(200);
        expect(plan.body.capacity).toEqual(
          await expectedCapacity(client, filter.sql, year[0], year[1], 24 * HOUR),
        );
      }
    },
    300_000,
  );
});
