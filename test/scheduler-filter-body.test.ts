/**
 * POST /v1/scheduler/filter takes bodies up to 16 MB from the callers allowed to use it
 * (admins: Nova's service user) only. A member's or an anonymous caller's 16 MB body is
 * refused (403, 401) without being read: at once, with no jump in the process's memory,
 * and without holding up other requests. An admin's large body is parsed in a worker one
 * at a time, so other requests go on meanwhile, and past a short queue it is a 503.
 */
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

jest.setTimeout(120_000);

const MB = 1024 * 1024;
const TOKENS = {
  'admin-token': { user_id: 'nova', project_id: 'service', roles: ['admin'] },
  'member-token': { user_id: 'alice', project_id: 'p1', roles: ['member'] },
};

interface Answer {
  status: number;
  ms: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** 16 MB of host names, as Nova would send for a large fleet. */
function hostsBody(): Buffer {
  const hosts = Array.from({ length: 160_000 }, (_, i) => `host-${'x'.repeat(90)}-${i}`);
  return Buffer.from(JSON.stringify({ project_id: 'p1', hosts }));
}

/** 16 MB of numbers: costly to parse and walk, and no host list at all. */
function hostileBody(): Buffer {
  return Buffer.from(
    `{"project_id":"p1","hosts":[${Array(7.5 * MB)
      .fill('0')
      .join(',')}]}`,
  );
}

describe('the scheduler filter body', () => {
  let db: TestDatabase;
  let t: TestApp;
  let port: number;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'climate-tokens-'));
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify(TOKENS));
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: join(dir, 'tokens.json'),
        // Five filters of 160,000 names at once take seconds each on a loaded machine:
        // this file is about the body, not the database's bounds (database-freeze.test.ts).
        DATABASE_QUERY_TIMEOUT_MS: '60000',
      },
    });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One request on a connection of its own; a reset after the whole answer is no error. */
  function send(method: string, path: string, token?: string, body?: Buffer): Promise<Answer> {
    const started = Date.now();
    return new Promise((resolve, reject) => {
      let answer: Answer | undefined;
      const req = httpRequest(
        {
          port,
          method,
          path,
          agent: false,
          headers: {
            ...(token ? { 'X-Auth-Token': token } : {}),
            ...(body ? { 'Content-Type': 'application/json', 'Content-Length': body.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            answer = {
              status: res.statusCode ?? 0,
              ms: Date.now() - started,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
            };
            resolve(answer);
          });
        },
      );
      req.on('error', (error) => (answer === undefined ? reject(error) : undefined));
      req.end(body);
    });
  }

  const smallGet = () => send('GET', '/v1/leases', 'admin-token');

  /** The slowest of small GETs sent one after another while `during` runs. */
  async function slowestGetDuring(during: Promise<unknown>): Promise<number> {
    let done = false;
    void during.finally(() => (done = true)).catch(() => undefined);
    let slowest = 0;
    while (!done) {
      const res = await smallGet();
      expect(res.status).toBe(200);
      slowest = Math.max(slowest, res.ms);
    }
    await during;
    return slowest;
  }

  async function baseline(): Promise<number> {
    let slowest = 0;
    for (let i = 0; i < 5; i++) slowest = Math.max(slowest, (await smallGet()).ms);
    return slowest;
  }

  it.each([
    ['a member', 'member-token', 403, 'PolicyNotAuthorized'],
    ['an anonymous caller', undefined, 401, 'Unauthorized'],
  ])('should refuse %s with a 16 MB body without reading it', async (_who, token, status, name) => {
    const body = hostsBody();
    expect(body.length).toBeGreaterThan(15 * MB);
    const before = await baseline();
    const gc = (global as { gc?: () => void }).gc;
    gc?.();
    const rss = process.memoryUsage().rss;
    let peak = rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const refused = Promise.all(
      Array.from({ length: 4 }, () => send('POST', '/v1/scheduler/filter', token, body)),
    );
    const slowest = await slowestGetDuring(refused);
    clearInterval(sampler);
    for (const res of await refused) {
      expect(res.status).toBe(status);
      expect(JSON.parse(res.body)).toMatchObject({ error_code: status, error_type: name });
      expect(res.headers.connection).toBe('close');
      expect(res.ms).toBeLessThan(3000);
    }
    // Four bodies of 16 MB, none held: far less than one of them.
    expect(peak - rss).toBeLessThan(8 * MB);
    expect(slowest).toBeLessThan(before + 1000);
  });

  /**
   * The longest the event loop stood still while `during` ran, in ms: what a large body
   * costs every other request (the service shares this process with the test).
   */
  async function longestStallDuring(during: Promise<unknown>): Promise<number> {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await during.catch(() => undefined);
    delay.disable();
    return delay.max / 1e6;
  }

  it('should answer an admin 16 MB host list without stalling other requests', async () => {
    const answered = send('POST', '/v1/scheduler/filter', 'admin-token', hostsBody());
    const stall = await longestStallDuring(answered);
    const res = await answered;
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toHaveProperty('hosts');
    // The body costs the loop little (its parse is in the worker); the filter's own work on
    // 160,000 names does not: pg writes and reads them as text[] on this thread (0.5 s
    // and 1 s alone). Generous, for a loaded machine.
    expect(stall).toBeLessThan(3000);
  });

  it('should refuse an admin 16 MB body of numbers with a 400 without stalling other requests', async () => {
    const body = hostileBody();
    expect(body.length).toBeGreaterThan(15 * MB);
    const answered = send('POST', '/v1/scheduler/filter', 'admin-token', body);
    const stall = await longestStallDuring(answered);
    const res = await answered;
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({
      error_code: 400,
      error_message: 'hosts must be a string or a list of strings',
    });
    expect(stall).toBeLessThan(1000);
  });

  it('should take a few admin bodies at once and answer the rest 503 with Retry-After', async () => {
    const body = hostsBody();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => send('POST', '/v1/scheduler/filter', 'admin-token', body)),
    );
    const ok = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 503);
    expect(ok.length + busy.length).toBe(8);
    expect(ok.length).toBeGreaterThanOrEqual(5);
    for (const a of busy) {
      expect(a.headers['retry-after']).toBe('5');
      expect(JSON.parse(a.body)).toMatchObject({ error_type: 'ServiceUnavailable' });
    }
  });

  it('should parse a small admin body as before', async () => {
    const res = await send(
      'POST',
      '/v1/scheduler/filter',
      'admin-token',
      Buffer.from(JSON.stringify({ project_id: 'p1', hosts: ['a', 'b'] })),
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toHaveProperty('hosts');
  });
});
