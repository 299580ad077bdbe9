/**
 * Leases written by SQL (a seed, an import, a hand fix) carry microseconds in created_at,
 * start_at and end_at, and some share one instant: paged with limit=1 and a marker, each
 * comes exactly once and the paging ends; streamed whole (pages of 500 inside), the list
 * ends with the right count.
 */
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const SMALL = 25;
const BIG = 1_203;

describe('lease paging over sub-millisecond times', () => {
  let db: TestDatabase;
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
    const client = await connect(db.url);
    // Three leases per instant, instants 1.234567 ms apart: never a whole millisecond.
    const insert = `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status,
                                        degraded, version, created_at)
       SELECT gen_random_uuid(), $2 || i, $2, 'u',
              timestamptz '2031-01-01 00:00:00.000001+00' + (i / 3) * interval '1.234567 ms',
              timestamptz '2031-02-01 00:00:00.000001+00' + (i / 3) * interval '1.234567 ms',
              'PENDING', false, 1,
              timestamptz '2030-01-01 00:00:00.000001+00' + (i / 3) * interval '1.234567 ms'
         FROM generate_series(1, $1) i`;
    await client.query(insert, [SMALL, 'small']);
    await client.query(insert, [BIG, 'big']);
    await client.end();
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it.each(['created_at', 'created_at:desc', 'start_date', 'end_date:desc'])(
    'should give each lease once and end when paged with limit=1 sorted by %s',
    async (sort) => {
      const seen: string[] = [];
      let marker: string | undefined;
      // A repeat would loop forever: stop well past the count and fail.
      for (let i = 0; i <= SMALL + 5; i++) {
        const res = await t.http
          .get('/v1/leases')
          .query({ project_id: 'small', limit: 1, sort, ...(marker ? { marker } : {}) })
          .expect(200);
        const page = res.body.leases as { id: string }[];
        if (page.length === 0) break;
        expect(page).toHaveLength(1);
        marker = page[0].id;
        seen.push(marker);
      }
      expect(seen).toHaveLength(SMALL);
      expect(new Set(seen).size).toBe(SMALL);
    },
  );

  /** Counts the leases of a streamed list; gives up (counted so far) past `max` leases. */
  function count(path: string, max: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = get({ port, path, headers: { 'X-Roles': 'admin' } }, (res) => {
        let leases = 0;
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const text = tail + chunk;
          leases += text.split('"name":"big').length - 1;
          tail = text.slice(-10);
          if (leases > max) {
            req.destroy();
            resolve(leases);
          }
        });
        res.on('end', () => resolve(leases));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
  }

  it.each(['created_at', 'created_at:desc', 'start_date:desc', 'end_date'])(
    'should end with every lease once when listed whole sorted by %s',
    async (sort) => {
      expect(await count(`/v1/leases?project_id=big&sort=${sort}`, BIG * 2)).toBe(BIG);
    },
  );
});
