import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { JsonLogger } from '../src/common/json-logger.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { serve } from '../src/observability/serve.js';
import { createTestDatabase, TestDatabase } from './support/database.js';

const PASSWORD = 'pw-never-logged-7f3a';

type Line = Record<string, unknown>;

describe('the access log, request ids and the start and stop lines', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let http: TestAgent;
  const lines: Line[] = [];
  const raw: string[] = [];

  /** The access line of the request that answered with this request id. */
  const accessLine = (requestId: string) =>
    lines.find((l) => l.msg === 'request' && l.request_id === requestId);

  beforeAll(async () => {
    db = await createTestDatabase();
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
    await db?.drop();
  });

  it('should log the start with the address, the role, the database and the migrations applied', () => {
    const started = lines.find((l) => l.msg === 'climate started');
    const { hostname, port, pathname } = new URL(db.url);
    expect(started).toMatchObject({
      level: 'info',
      context: 'climate',
      role: 'api',
      api: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      database: { host: hostname, port: Number(port), database: pathname.slice(1) },
      migrations_applied: expect.arrayContaining([expect.stringMatching(/^Init\d+$/)]),
    });
    expect(started?.ops).toBeUndefined();
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
    const returned = res.headers['x-openstack-request-id'] as string;
    expect(returned).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(accessLine(returned)).toMatchObject({ route: '/v1/leases/:id', status: 404 });
    // Every line of the request carries the same id: the error filter's warning too.
    expect(lines.find((l) => l.level === 'warn' && l.request_id === returned)).toBeDefined();
    expect(raw.join('\n')).not.toContain('req-not-a-uuid');
  });

  it('should log probes at debug, with no project, and refusals before routing as unmatched', async () => {
    const probe = await http.get('/readyz').expect(200);
    const line = accessLine(probe.headers['x-openstack-request-id'] as string);
    expect(line).toMatchObject({ level: 'debug', route: '/readyz', status: 200 });
    expect(line).not.toHaveProperty('project_id');
    const refused = await http
      .post('/v1/leases')
      .set('Content-Type', 'text/plain')
      .send('x')
      .expect(400);
    expect(accessLine(refused.headers['x-openstack-request-id'] as string)).toMatchObject({
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
