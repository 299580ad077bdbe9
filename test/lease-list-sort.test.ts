/**
 * The lease list in every sort order it takes (created_at, name, start_date, end_date,
 * status; asc and desc), with ties in every key: paged with limit and marker, or streamed
 * whole, for an admin across projects, with a status filter, and for a project member, it
 * lists exactly the leases a sort by (key, id) gives. Then, with 20,000 more leases, each
 * page is an index range of its own index, not a sort of the table.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const KEYS = {
  created_at: 'created_at',
  name: 'name',
  start_date: 'start_at',
  end_date: 'end_at',
  status: 'status',
} as const;
type Key = keyof typeof KEYS;
const STATUSES = ['PENDING', 'ACTIVE', 'TERMINATED', 'ERROR'];
const BASE = Date.parse('2031-01-01T00:00:00Z');
const HOUR = 3600_000;

interface Row {
  id: string;
  name: string;
  project_id: string;
  start_at: number;
  end_at: number;
  status: string;
  created_at: number;
}

/** A small deterministic generator, so a failure can be replayed. */
function generator(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s % n;
  };
}

/** Leases with few distinct values per key, so every page boundary falls among ties. */
function leases(count: number, seed: number): Row[] {
  const pick = generator(seed);
  const letters = 'abc';
  return Array.from({ length: count }, () => {
    const start = BASE + pick(40) * HOUR;
    return {
      id: randomUUID(),
      name: Array.from({ length: 3 }, () => letters[pick(3)]).join(''),
      project_id: `p${pick(3)}`,
      start_at: start,
      end_at: start + (1 + pick(5)) * HOUR,
      status: STATUSES[pick(STATUSES.length)],
      created_at: BASE - pick(50) * HOUR,
    };
  });
}

async function insert(client: Client, rows: Row[]): Promise<void> {
  await client.query(
    `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, created_at)
     SELECT r.id, r.name, r.project_id, 'u', to_timestamp(r.start_at / 1000.0),
            to_timestamp(r.end_at / 1000.0), r.status, to_timestamp(r.created_at / 1000.0)
       FROM jsonb_to_recordset($1) AS r(id uuid, name text, project_id text, start_at float8,
                                         end_at float8, status text, created_at float8)`,
    [JSON.stringify(rows)],
  );
}

/** The ids in (key, id) order, as the list must give them. */
function sorted(rows: Row[], key: Key, dir: 'asc' | 'desc'): string[] {
  const column = KEYS[key];
  const sign = dir === 'asc' ? 1 : -1;
  const compare = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
  return [...rows]
    .sort((a, b) => sign * (compare(a[column], b[column]) || compare(a.id, b.id)))
    .map((r) => r.id);
}

describe('the lease list in each sort order', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  const rows = leases(700, 20_261_124);

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
    client = await connect(db.url);
    await insert(client, rows);
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  const ADMIN = { 'X-Roles': 'admin' };
  const member = (project: string) => ({ 'X-Project-Id': project, 'X-Roles': 'member' });

  async function list(query: string, headers: Record<string, string>): Promise<string[]> {
    const res = await t.http.get(`/v1/leases?${query}`).set(headers).expect(200);
    return (res.body.leases as { id: string }[]).map((l) => l.id);
  }

  /** Every page of `limit`, each after the last lease of the one before. */
  async function paged(
    query: string,
    headers: Record<string, string>,
    limit: number,
  ): Promise<string[]> {
    const all: string[] = [];
    for (;;) {
      const marker = all.length === 0 ? '' : `&marker=${all[all.length - 1]}`;
      const page = await list(`${query}&limit=${limit}${marker}`, headers);
      all.push(...page);
      if (page.length < limit) return all;
    }
  }

  const orders = Object.keys(KEYS).flatMap((key) =>
    (['asc', 'desc'] as const).map((dir) => [key as Key, dir] as const),
  );

  it.each(orders)(
    'should page and stream by %s %s in (key, id) order when leases tie',
    async (key, dir) => {
      const sort = `sort=${key}:${dir}`;
      const everyone = sorted(rows, key, dir);
      expect(await paged(sort, ADMIN, 97)).toEqual(everyone);
      // No limit: the service pages by itself, 500 at a time.
      expect(await list(sort, ADMIN)).toEqual(everyone);
      const active = sorted(
        rows.filter((r) => r.status === 'ACTIVE'),
        key,
        dir,
      );
      expect(await paged(`${sort}&status=ACTIVE`, ADMIN, 41)).toEqual(active);
      const own = sorted(
        rows.filter((r) => r.project_id === 'p1'),
        key,
        dir,
      );
      expect(await paged(sort, member('p1'), 53)).toEqual(own);
      expect(await paged(`${sort}&project_id=p1`, ADMIN, 53)).toEqual(own);
    },
  );

  describe('with 20,000 more leases', () => {
    beforeAll(async () => {
      await insert(client, leases(20_000, 7));
      await client.query(`VACUUM ANALYZE leases`);
    }, 60_000);

    /** The plan of a page as the repository asks for it: after a marker, in one order. */
    async function plan(column: string, dir: 'asc' | 'desc'): Promise<string> {
      const { rows: marker } = await client.query<{ value: unknown; id: string }>(
        `SELECT ${column} AS value, id FROM leases ORDER BY id LIMIT 1 OFFSET 5000`,
      );
      const { rows: lines } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT * FROM leases l WHERE (l.${column}, l.id) ${dir === 'asc' ? '>' : '<'} ($1, $2)
          ORDER BY l.${column} ${dir}, l.id ${dir} LIMIT 500`,
        [marker[0].value, marker[0].id],
      );
      return lines.map((l) => l['QUERY PLAN']).join('\n');
    }

    it.each(orders)('should read a page by %s %s as an index range', async (key, dir) => {
      const text = await plan(KEYS[key], dir);
      // Through the key's index, never the whole table (a marker near the end may leave so
      // few rows that the planner sorts those few after a bitmap scan of the same index).
      expect(text).not.toMatch(/Seq Scan/);
      expect(text).toMatch(
        /(Index Scan( Backward)? using|Bitmap Index Scan on) leases_(created|name|start|end|status) /,
      );
    });
  });
});
