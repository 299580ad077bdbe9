/**
 * A frozen database (every server process stopped with SIGSTOP: sockets open, nothing
 * answers) holds no request longer than DATABASE_CONNECT_TIMEOUT_MS +
 * DATABASE_QUERY_TIMEOUT_MS + 1 s (docs/operations.md): creates and lists answer 503 with
 * Retry-After meanwhile, whether they held a pooled connection or waited for one, and the
 * service serves again once the server runs; a restart is a 503 too, never a 500.
 * Runs on a private PostgreSQL: the shared one is never stopped.
 */
import type { Response } from 'supertest';
import { startApp, TestApp } from './support/app.js';
import { PrivatePostgres } from './support/private-postgres.js';
import { sleep, waitFor } from './support/seed.js';

jest.setTimeout(180_000);

const CONNECT_MS = 1000;
const QUERY_MS = 2000;
/** The documented bound, and a loaded machine's slack on top. */
const BOUND_MS = CONNECT_MS + QUERY_MS + 1000;
const SLACK_MS = 3000;

interface Answer {
  status: number;
  ms: number;
  retryAfter?: string;
  name?: string;
}

describe('a frozen or restarting database', () => {
  let pg: PrivatePostgres;
  let t: TestApp;
  let n = 0;

  beforeAll(async () => {
    pg = await PrivatePostgres.start();
    t = await startApp({
      databaseUrl: pg.url(),
      env: {
        DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_MS),
        DATABASE_QUERY_TIMEOUT_MS: String(QUERY_MS),
      },
    });
  });
  afterAll(async () => {
    await pg?.destroy();
    await t?.close().catch(() => undefined);
  });

  function create(): Promise<Response> {
    n += 1;
    return t.http
      .post('/v1/leases')
      .send({ name: `f-${n}`, start_date: '2030-02-01 00:00', end_date: '2030-02-02 00:00' });
  }

  async function timed(send: () => Promise<Response>): Promise<Answer> {
    const started = Date.now();
    const res = await send();
    return {
      status: res.status,
      ms: Date.now() - started,
      retryAfter: res.headers['retry-after'],
      name: res.body?.error_type,
    };
  }

  /** Creates and lists, a few at once (more than the pool has), every `everyMs` for `forMs`. */
  async function load(forMs: number, everyMs: number, width: number): Promise<Answer[]> {
    const answers: Promise<Answer>[] = [];
    for (const end = Date.now() + forMs; Date.now() < end; await sleep(everyMs)) {
      for (let i = 0; i < width; i++) {
        answers.push(
          timed(create),
          timed(() => t.http.get('/v1/leases')),
        );
      }
    }
    return Promise.all(answers);
  }

  async function serves(): Promise<void> {
    await waitFor('the lease list to answer 200 again', async () => {
      const res = await t.http.get('/v1/leases');
      return res.status === 200 ? true : undefined;
    });
    expect((await create()).status).toBe(201);
  }

  it('should answer every create and list 503 within the bound while the server is frozen, and serve after', async () => {
    expect((await create()).status).toBe(201);
    // Every pooled connection open and idle, as under load: their queries will hang.
    await Promise.all(Array.from({ length: 12 }, () => t.http.get('/v1/leases').expect(200)));

    pg.freeze();
    let answers: Answer[];
    try {
      answers = await load(30_000, 3000, 6);
    } finally {
      pg.thaw();
    }
    expect(answers.length).toBeGreaterThanOrEqual(100);
    for (const a of answers) {
      expect(a).toMatchObject({ status: 503, retryAfter: '5', name: 'ServiceUnavailable' });
      expect(a.ms).toBeLessThan(BOUND_MS + SLACK_MS);
    }
    await serves();
  });

  it('should answer 503, never 500, while the server restarts, and serve after', async () => {
    for (const mode of ['fast', 'immediate'] as const) {
      const during = load(4000, 200, 3);
      await sleep(500);
      await pg.stopServer(mode);
      await sleep(1000);
      await pg.startServer();
      const answers = await during;
      const statuses = new Set(answers.map((a) => a.status));
      expect([...statuses].filter((s) => ![200, 201, 503].includes(s))).toEqual([]);
      expect(statuses).toContain(503);
      for (const a of answers) expect(a.ms).toBeLessThan(BOUND_MS + SLACK_MS);
      await serves();
    }
  });
});
