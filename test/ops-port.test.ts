import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { JsonLogger } from '../src/common/json-logger.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { serve } from '../src/observability/serve.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/seed.js';

jest.setTimeout(90_000);

const ROOT = join(__dirname, '..');
const MAIN = join(ROOT, 'dist', 'main.js');
const PASSWORD = 'pw-ops-port-never-logged';

type Line = Record<string, unknown>;

function newest(dir: string): number {
  return Math.max(
    0,
    ...readdirSync(dir).map((name) => {
      const path = join(dir, name);
      const stat = statSync(path);
      return stat.isDirectory() ? newest(path) : name.endsWith('.ts') ? stat.mtimeMs : 0;
    }),
  );
}

/** `npm run build`, unless dist/ is newer than every source (CI builds it for `npm start`). */
function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(MAIN).mtimeMs;
  } catch {
    // not built yet
  }
  if (built < newest(join(ROOT, 'src'))) {
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore', timeout: 120_000 });
  }
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, text: await res.text() };
}

describe('the ops port (METRICS_PORT) in each role', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  describe('ROLE=manager: the real process', () => {
    let own: TestDatabase;
    let child: ChildProcess;
    let output = '';
    let exited: Promise<number | null>;
    const lines = () =>
      output
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Line);

    beforeAll(async () => {
      ensureBuilt();
      // A database of its own: the start line names the migrations this start applied.
      own = await createTestDatabase();
      const url = new URL(own.url);
      url.password = PASSWORD;
      child = spawn(process.execPath, [MAIN], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: url.toString(),
          ROLE: 'manager',
          METRICS_HOST: '127.0.0.1',
          METRICS_PORT: '0',
          EVENT_POLL_MS: '100',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
      await waitFor(
        'the start line',
        () => lines().find((l) => l.msg === 'climate started'),
        30_000,
      );
    });
    afterAll(async () => {
      if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
      await own?.drop();
    });

    const ops = () => `http://${String(lines().find((l) => l.msg === 'climate started')?.ops)}`;

    it('should log its start with the ops address, the role, the database and the migrations', () => {
      const started = lines().find((l) => l.msg === 'climate started');
      expect(started).toMatchObject({
        role: 'manager',
        ops: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
        database: { database: own.name, port: Number(new URL(own.url).port || 5432) },
        migrations_applied: expect.arrayContaining([expect.stringMatching(/^Init\d+$/)]),
      });
      expect(started).not.toHaveProperty('api');
    });

    it('should serve metrics and probes on METRICS_PORT and nothing of the API', async () => {
      const metrics = await get(`${ops()}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.text).toContain('climate_manager_polls_total');
      expect((await get(`${ops()}/healthz`)).status).toBe(200);
      const ready = await waitFor('the manager to be ready', async () => {
        const res = await get(`${ops()}/readyz`);
        return res.status === 200 ? res : undefined;
      });
      expect(JSON.parse(ready.text)).toMatchObject({ info: { manager: { status: 'up' } } });
      for (const path of ['/v1/leases', '/', '/versions', '/metrics/x']) {
        const res = await get(`${ops()}${path}`);
        expect(res.status).toBe(404);
        expect(JSON.parse(res.text)).toEqual({ error: 404, error_message: expect.any(String) });
      }
    });

    it('should stop on SIGTERM with exit code 0, a stop line, and never the password in its output', async () => {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const messages = lines().map((l) => l.msg);
      expect(messages).toContain('climate stopping');
      expect(messages.at(-1)).toBe('climate stopped');
      expect(lines().find((l) => l.msg === 'climate stopping')).toMatchObject({
        signal: 'SIGTERM',
      });
      expect(output).not.toContain(PASSWORD);
    });
  });

  describe('ROLE=all and ROLE=api: listening apps', () => {
    async function listening(role: 'all' | 'api', metricsPort: string | null = '0') {
      const config: Config = {
        ...loadConfig({
          DATABASE_URL: db.url,
          ROLE: role,
          PORT: '0',
          METRICS_PORT: metricsPort ?? undefined,
          LOG_LEVEL: 'error',
        }),
        managerTimer: false,
      };
      const app: INestApplication = await buildApp(config, {
        clock: new FakeClock(new Date()),
        logger: false,
      });
      const at = await serve(app, config);
      return { app, api: `http://${at.api}`, ops: at.ops === null ? null : `http://${at.ops}` };
    }

    it('should serve metrics and probes on both ports with ROLE=all, the API only on PORT', async () => {
      const { app, api, ops } = await listening('all');
      try {
        expect(ops).not.toBeNull();
        expect((await get(`${api}/v1/leases`)).status).toBe(200);
        expect((await get(`${api}/metrics`)).status).toBe(200);
        expect((await get(`${api}/readyz`)).status).toBe(200);
        expect((await get(`${ops}/metrics`)).text).toContain(
          'climate_http_request_duration_seconds',
        );
        expect((await get(`${ops}/healthz`)).status).toBe(200);
        expect((await get(`${ops}/readyz`)).status).toBe(200);
        expect((await get(`${ops}/v1/leases`)).status).toBe(404);
      } finally {
        await app.close();
      }
      // Closed with the app.
      await expect(get(`${ops}/healthz`)).rejects.toThrow();
    });

    it('should start two ROLE=all apps on one machine, 9464 taken, each with its ops on PORT only, when METRICS_PORT is unset', async () => {
      // Held by us, or already by another program: taken either way.
      const squatter = createNetServer();
      await new Promise<void>((resolve) => {
        squatter.once('error', () => resolve());
        squatter.listen(9464, '127.0.0.1', () => resolve());
      });
      const started: Awaited<ReturnType<typeof listening>>[] = [];
      try {
        started.push(await listening('all', null));
        started.push(await listening('all', null));
        for (const { api, ops } of started) {
          expect(ops).toBeNull();
          expect((await get(`${api}/v1/leases`)).status).toBe(200);
          expect((await get(`${api}/metrics`)).text).toContain('climate_manager_polls_total');
          expect((await get(`${api}/readyz`)).status).toBe(200);
        }
        expect(started[0].api).not.toBe(started[1].api);
      } finally {
        for (const { app } of started) await app.close();
        await new Promise((resolve) => squatter.close(resolve));
      }
    });
  });

  describe('ROLE=api: a listening app, its access log, request ids, start and stop lines', () => {
    let app: INestApplication;
    let http: TestAgent;
    const lines: Line[] = [];
    const raw: string[] = [];

    /** The access line of the request that answered with this request id. */
    const accessLine = (requestId: string) =>
      lines.find((l) => l.msg === 'request' && l.request_id === requestId);

    beforeAll(async () => {
      // Trust auth ignores the password; it is there to prove it never reaches the log.
      const url = new URL(db.url);
      url.password = PASSWORD;
      const config: Config = {
        ...loadConfig({ DATABASE_URL: url.toString(), ROLE: 'api', PORT: '0', LOG_LEVEL: 'debug' }),
        managerTimer: false,
      };
      const logger = new JsonLogger('debug', (line) => {
        raw.push(line);
        lines.push(JSON.parse(line) as Line);
      });
      app = await buildApp(config, { clock: new FakeClock(new Date()), logger });
      await serve(app, config);
      http = request(app.getHttpServer());
    });
    afterAll(async () => {
      await app?.close();
    });

    it('should log the start with the API address, the role and the database, and open no ops port', () => {
      const started = lines.find((l) => l.msg === 'climate started');
      const { hostname, port, pathname } = new URL(db.url);
      expect(started).toMatchObject({
        level: 'info',
        context: 'climate',
        role: 'api',
        api: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
        database: { host: hostname, port: Number(port), database: pathname.slice(1) },
        // The first process on the database applied them (see the manager's test).
        migrations_applied: expect.any(Array),
      });
      expect(started).not.toHaveProperty('ops');
    });

    it('should serve metrics and readiness (without a manager check) on the API port', async () => {
      const metrics = await http.get('/metrics').expect(200);
      expect(metrics.text).toContain('climate_leases{status="PENDING"}');
      const ready = await http.get('/readyz').expect(200);
      expect(Object.keys(ready.body.info as object)).toEqual(['database']);
    });

    it('should return and log the request id the client sent when it is well formed', async () => {
      const sent = `req-${randomUUID()}`;
      const res = await http
        .get('/v1/leases')
        .set('X-OpenStack-Request-ID', sent)
        .set('X-Project-Id', 'p-alpha')
        .expect(200);
      expect(res.headers['x-openstack-request-id']).toBe(sent);
      expect(accessLine(sent)).toEqual({
        time: expect.any(String),
        level: 'info',
        context: 'http',
        msg: 'request',
        method: 'GET',
        route: '/v1/leases',
        status: 200,
        duration_ms: expect.any(Number),
        request_id: sent,
        project_id: 'p-alpha',
      });
    });

    it('should make, return and log a new request id when the client sent a malformed one', async () => {
      const res = await http
        .get(`/v1/leases/${randomUUID()}`)
        .set('X-OpenStack-Request-ID', 'req-not-a-uuid')
        .expect(404);
      const returned = res.headers['x-openstack-request-id'];
      expect(returned).toMatch(/^req-[0-9a-f-]{36}$/);
      expect(accessLine(returned)).toMatchObject({ route: '/v1/leases/:id', status: 404 });
      // Every line of the request carries the same id: the error filter's warning too.
      expect(lines.find((l) => l.level === 'warn' && l.request_id === returned)).toBeDefined();
      expect(raw.join('\n')).not.toContain('req-not-a-uuid');
    });

    it('should log probes at debug, with no project, and refusals before routing as unmatched', async () => {
      const probe = await http.get('/readyz').expect(200);
      const line = accessLine(probe.headers['x-openstack-request-id']);
      expect(line).toMatchObject({ level: 'debug', route: '/readyz', status: 200 });
      expect(line).not.toHaveProperty('project_id');
      const refused = await http
        .post('/v1/leases')
        .set('Content-Type', 'text/plain')
        .send('x')
        .expect(400);
      expect(accessLine(refused.headers['x-openstack-request-id'])).toMatchObject({
        level: 'info',
        method: 'POST',
        route: 'unmatched',
        status: 400,
      });
    });

    it('should log a stop line on shutdown and never the database password', async () => {
      await app.close();
      expect(lines.at(-1)).toMatchObject({ msg: 'climate stopping', role: 'api' });
      expect(raw.join('\n')).not.toContain(PASSWORD);
    });
  });
});
