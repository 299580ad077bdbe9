/**
 * The scheduler filter answers as Blazar's rules say, host by host: random fleets (hosts
 * in the freepool, shared, recycle or a reservation pool, or in none; topology and
 * instance memberships on top), reservation pools owned by a project with extra projects
 * written every way Blazar's metadata has them, and random requests (hosts named with
 * repeats and unknown names, or none; hints of one or several pools; explained or not),
 * on real PostgreSQL through the API. Then the plans: a request naming hosts reads those
 * hosts, and a hinted request those pools, not the fleet.
 */
import fc from 'fast-check';
import type { Client } from 'pg';
import {
  HINTED_SQL,
  namedGroupsSql,
  namedPassingSql,
  PROBED_NAMES,
} from '../src/scheduler/pool-verdicts.repository.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const PROJECTS = ['p0', 'p1', 'p2', 'p3'];
const RESERVATIONS = ['r0', 'r1', 'r2', 'r3'];
/** Where a host sits: its pool, or none. */
const PLACES = ['none', 'freepool', 'shared', 'recycle', ...RESERVATIONS] as const;
/** Extra-project marks as they are found in pool metadata: only some of them allow. */
const MARKS: unknown[] = [true, false, 'true', 'True', 'yes', 'YES', '1', 'no', ' true', 1, 0];

interface Pool {
  name: string;
  owner: string;
  metadata: Record<string, unknown>;
}

interface Fleet {
  /** Host names by id order, each with its pool. */
  hosts: { name: string; place: (typeof PLACES)[number]; rack: number; instance: boolean }[];
  pools: Pool[];
}

interface Request {
  project_id: string;
  hosts?: string[] | null;
  hints?: { reservation?: string | string[] };
}

interface Answer {
  hosts: string[];
  rejected?: Record<string, string>;
}

const pool: fc.Arbitrary<Omit<Pool, 'name'>> = fc
  .record({
    owner: fc.constantFrom(...PROJECTS),
    extra: fc.dictionary(fc.constantFrom(...PROJECTS), fc.constantFrom(...MARKS), {
      maxKeys: 3,
    }),
  })
  .map(({ owner, extra }) => ({ owner, metadata: { ...extra, 'blazar:owner': owner } }));

const fleet: fc.Arbitrary<Fleet> = fc
  .record({
    hosts: fc.array(
      fc.record({
        place: fc.constantFrom(...PLACES),
        rack: fc.integer({ min: 0, max: 2 }),
        instance: fc.boolean(),
      }),
      { minLength: 1, maxLength: 30 },
    ),
    pools: fc.tuple(pool, pool, pool, pool),
  })
  .map(({ hosts, pools }) => ({
    hosts: hosts.map((h, i) => ({ ...h, name: `eq-${i}` })),
    pools: pools.map((p, i) => ({ ...p, name: RESERVATIONS[i] })),
  }));

/** A hint names reservation pools, sometimes other pools or none that exists. */
const hinted = fc.constantFrom(...RESERVATIONS, 'freepool', 'shared', 'no-such-pool');

function requests(f: Fleet): fc.Arbitrary<{ request: Request; explain: boolean }[]> {
  const name = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...f.hosts.map((h) => h.name)) },
    { weight: 1, arbitrary: fc.constantFrom('unknown-1', 'unknown-2') },
  );
  const request: fc.Arbitrary<Request> = fc.record(
    {
      project_id: fc.constantFrom(...PROJECTS),
      hosts: fc.option(fc.array(name, { maxLength: 12 }), { nil: null }),
      hints: fc.record(
        { reservation: fc.oneof(hinted, fc.array(hinted, { minLength: 1, maxLength: 3 })) },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ['project_id'] },
  );
  return fc.array(fc.record({ request, explain: fc.boolean() }), { minLength: 1, maxLength: 8 });
}

/** Blazar's filter, host by host. */
function reference(f: Fleet, request: Request, explain: boolean): Answer {
  const hint = request.hints?.reservation;
  const wanted = hint === undefined ? [] : typeof hint === 'string' ? [hint] : hint;
  const placeOf = new Map(f.hosts.map((h) => [h.name, h.place]));
  const allows = (p: Pool) => {
    if (p.owner === request.project_id) return true;
    const mark = p.metadata[request.project_id];
    return mark === true || (typeof mark === 'string' && /^(true|1|yes)$/i.test(mark));
  };
  const why = (name: string): string | null => {
    const place = placeOf.get(name) ?? 'none';
    if (wanted.length === 0) {
      return place === 'none' || place === 'shared'
        ? null
        : 'host is in the reservation pool; a reservation hint is required';
    }
    const p = f.pools.find((candidate) => candidate.name === place);
    if (p === undefined || !wanted.includes(place)) {
      return `host is not in reservation ${wanted.join(', ')}`;
    }
    return allows(p) ? null : `reservation ${place} belongs to another project`;
  };
  const hosts: string[] = [];
  const rejected: Record<string, string> = {};
  for (const name of request.hosts ?? f.hosts.map((h) => h.name)) {
    const reason = why(name);
    if (reason === null) hosts.push(name);
    else rejected[name] = reason;
  }
  return explain ? { hosts, rejected } : { hosts };
}

async function load(client: Client, f: Fleet): Promise<void> {
  await client.query(`DELETE FROM hosts`);
  await client.query(
    `DELETE FROM aggregates WHERE kind IN ('reservation', 'instance', 'topology')`,
  );
  await client.query(
    `INSERT INTO aggregates (name, kind, metadata, created_at)
     SELECT p ->> 'name', 'reservation', p -> 'metadata', now() FROM jsonb_array_elements($1) p
     UNION ALL SELECT 'rack-' || i, 'topology', '{}', now() FROM generate_series(0, 2) i
     UNION ALL SELECT 'eq-instance', 'instance', '{}', now()`,
    [JSON.stringify(f.pools)],
  );
  // Hosts in fleet order, so their ids are too.
  for (const h of f.hosts) {
    const { rows } = await client.query<{ id: number }>(
      `INSERT INTO hosts (hypervisor_hostname, service_name, vcpus, memory_mb, local_gb,
                          hypervisor_type, hypervisor_version, cpu_info, availability_zone, created_at)
       VALUES ($1, $1, 8, 16384, 100, 'QEMU', 1, '', 'nova', now()) RETURNING id`,
      [h.name],
    );
    const memberships = [`rack-${h.rack}`, ...(h.instance ? ['eq-instance'] : [])];
    if (h.place !== 'none') memberships.push(h.place);
    await client.query(
      `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
       SELECT a.id, $1, a.kind, now() FROM aggregates a WHERE a.name = ANY($2)`,
      [rows[0].id, memberships],
    );
  }
}

describe('the scheduler filter against Blazar’s rules host by host', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
    client = await connect(db.url);
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  async function ask(request: Request, explain: boolean): Promise<Answer> {
    const res = await t.http
      .post(`/v1/scheduler/filter${explain ? '?explain=true' : ''}`)
      .send(request)
      .expect(200);
    return res.body as Answer;
  }

  it('should answer as the rules say, host by host, when fleets and requests are random', async () => {
    await fc.assert(
      fc.asyncProperty(
        fleet.chain((f) => fc.tuple(fc.constant(f), requests(f))),
        async ([f, asked]) => {
          await load(client, f);
          for (const { request, explain } of asked) {
            // Twice: the second answer of a whole-fleet request comes from the cache.
            expect(await ask(request, explain)).toEqual(reference(f, request, explain));
            expect(await ask(request, explain)).toEqual(reference(f, request, explain));
          }
        },
      ),
      { numRuns: 60, seed: 11_2611 },
    );
  }, 240_000);

  it('should answer as the rules say when more names are asked than are probed one by one', async () => {
    // A fleet of 30 at most: past PROBED_NAMES names the hosts are joined, not probed.
    const f = fc.sample(fleet, { numRuns: 1, seed: 7 })[0];
    await load(client, f);
    const names = Array.from(
      { length: 3 * PROBED_NAMES },
      (_, i) => f.hosts[i % (f.hosts.length + 1)]?.name ?? `unknown-${i}`,
    );
    for (const project_id of PROJECTS) {
      for (const hints of [{}, { reservation: 'r0' }, { reservation: ['r1', 'r2'] }]) {
        const request = { project_id, hosts: names, hints };
        for (const explain of [false, true]) {
          expect(await ask(request, explain)).toEqual(reference(f, request, explain));
        }
      }
    }
  }, 120_000);

  describe('with 20,000 hosts', () => {
    /** Every node of a JSON plan, depth first. */
    function nodes(plan: Record<string, unknown>): Record<string, unknown>[] {
      const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
      return [plan, ...children.flatMap(nodes)];
    }

    async function plan(text: string, params: unknown[]): Promise<Record<string, unknown>[]> {
      const { rows } = await client.query<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        params,
      );
      return nodes(rows[0]['QUERY PLAN'][0].Plan);
    }

    const scanned = (plan: Record<string, unknown>[]) =>
      plan
        .filter((n) => n['Node Type'] === 'Seq Scan')
        .map((n) => n['Relation Name'])
        .filter((r) => r === 'hosts' || r === 'aggregate_hosts');

    beforeAll(async () => {
      await client.query(`DELETE FROM hosts`);
      await client.query(`DELETE FROM aggregates WHERE kind IN ('reservation', 'topology')`);
      await client.query(
        `INSERT INTO aggregates (name, kind, metadata, created_at)
         SELECT 'big-' || i, 'reservation', jsonb_build_object('blazar:owner', 'p1'), now()
           FROM generate_series(1, 100) i`,
      );
      await client.query(
        `INSERT INTO hosts (hypervisor_hostname, service_name, vcpus, memory_mb, local_gb,
                            hypervisor_type, hypervisor_version, cpu_info, availability_zone, created_at)
         SELECT 'big-' || i, 'big-' || i, 8, 16384, 100, 'QEMU', 1, '', 'nova', now()
           FROM generate_series(1, 20000) i`,
      );
      // A reservation pool of 20 hosts for each of the first 2,000, the freepool after.
      await client.query(
        `INSERT INTO aggregate_hosts (aggregate_id, host_id, kind, since)
         SELECT a.id, h.id, a.kind, now() FROM hosts h
           JOIN aggregates a ON a.name = CASE WHEN h.id % 20000 < 2000
                                              THEN 'big-' || (1 + h.id % 20000 / 20) ELSE 'freepool' END`,
      );
      await client.query(`VACUUM ANALYZE hosts, aggregates, aggregate_hosts`);
    }, 120_000);

    it('should read only the named hosts when a request names a few thousand of them', async () => {
      const names = Array.from({ length: 3000 }, (_, i) => `big-${1 + i * 6}`);
      for (const wanted of [[], ['big-3']]) {
        for (const text of [namedPassingSql(true), namedGroupsSql(true)]) {
          const probed = await plan(text, ['p1', wanted, names]);
          expect(scanned(probed)).toEqual([]);
          expect(probed.some((n) => n['Index Name'] === 'hosts_hypervisor_hostname_key')).toBe(
            true,
          );
        }
      }
      // What the probes are for: left to itself, the planner hashes every host.
      const joined = await plan(namedPassingSql(false), ['p1', [], names]);
      expect(scanned(joined)).toContain('hosts');
    });

    it('should read only the hinted pools when a hinted request names no hosts', async () => {
      const hinted = await plan(HINTED_SQL, ['p1', ['big-3', 'big-4']]);
      expect(scanned(hinted)).toEqual([]);
    });

    it('should explain every host when 150,000 of them pass', async () => {
      // Hosts in no pool pass without a hint: one group of 150,000 names.
      await client.query(
        `INSERT INTO hosts (hypervisor_hostname, service_name, vcpus, memory_mb, local_gb,
                            hypervisor_type, hypervisor_version, cpu_info, availability_zone, created_at)
         SELECT 'free-' || i, 'free-' || i, 8, 16384, 100, 'QEMU', 1, '', 'nova', now()
           FROM generate_series(1, 150000) i`,
      );
      const answer = await ask({ project_id: 'p1' }, true);
      expect(answer.hosts).toHaveLength(150_000);
      expect(answer.hosts[149_999]).toBe('free-150000');
      expect(Object.keys(answer.rejected ?? {})).toHaveLength(20_000);
    }, 120_000);
  });
});
