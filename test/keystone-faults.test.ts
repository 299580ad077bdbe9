import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'supertest';
import { startApp, TestApp } from './support/app.js';
import { createTestDatabase, TestDatabase } from './support/database.js';

jest.setTimeout(30_000);

type Answer = 'ok' | 'error' | 'hang' | 'garbage';

/**
 * A fake Keystone v3: issues Climate's service token and validates user tokens, or fails
 * in the way the test asks: a 500, no answer at all, or a body that is not JSON.
 */
class FakeKeystone {
  port = 0;
  /** How POST /v3/auth/tokens (the service token) answers. */
  serviceToken: Answer = 'ok';
  /** How GET /v3/auth/tokens (validating a user token) answers. */
  validation: Answer = 'ok';
  readonly validTokens = new Set(['good-token']);
  private server: Server | null = null;
  private readonly hanging: ServerResponse[] = [];

  async listen(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Nothing listens on the port any more: connections are refused. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.releaseHanging();
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  releaseHanging(): void {
    for (const res of this.hanging.splice(0)) res.destroy();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/v3`;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const isIssue = req.method === 'POST' && req.url === '/v3/auth/tokens';
    const isValidate = req.method === 'GET' && req.url?.startsWith('/v3/auth/tokens');
    const answer = isIssue ? this.serviceToken : isValidate ? this.validation : 'error';
    if (answer === 'hang') {
      this.hanging.push(res);
      return;
    }
    if (answer === 'error') {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{"error": {"code": 500, "message": "An unexpected error occurred"}}');
      return;
    }
    if (answer === 'garbage') {
      res.writeHead(200, { 'Content-Type': 'text/html', 'X-Subject-Token': 'svc' });
      res.end('<html>proxy error</html>');
      return;
    }
    if (isIssue) {
      res.writeHead(201, { 'Content-Type': 'application/json', 'X-Subject-Token': 'svc' });
      res.end(JSON.stringify({ token: { expires_at: expires, user: { id: 'climate-id' } } }));
      return;
    }
    const subject = req.headers['x-subject-token'];
    if (typeof subject !== 'string' || !this.validTokens.has(subject)) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error": {"code": 404, "message": "Could not find token"}}');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        token: {
          expires_at: expires,
          user: { id: 'u1' },
          project: { id: 'p1' },
          roles: [{ name: 'member' }, { name: 'reader' }], // Keystone lists the implied role too
        },
      }),
    );
  }
}

function expectBlazarError(res: Response, status: number): void {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({
    error_code: status,
    error_name: status,
    error_message: expect.any(String),
    error_type: expect.any(String),
  });
}

describe('AUTH_STRATEGY=keystone when Keystone fails, hangs or is unreachable', () => {
  let db: TestDatabase;
  let keystone: FakeKeystone;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    keystone = new FakeKeystone();
    await keystone.listen();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        AUTH_STRATEGY: 'keystone',
        KEYSTONE_URL: keystone.url,
        SERVICE_PASSWORD: 'secret',
        KEYSTONE_TIMEOUT_MS: '300',
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await keystone?.close();
    await db?.drop();
  });
  beforeEach(() => {
    keystone.serviceToken = 'ok';
    keystone.validation = 'ok';
  });

  // Each test uses a token of its own: a validated token is cached until it expires.
  const list = (token: string) => t.http.get('/v1/leases').set('X-Auth-Token', token);

  it('should answer 502 when Keystone answers 500 to the service token request', async () => {
    keystone.serviceToken = 'error';
    keystone.validTokens.add('token-a');
    const res = await list('token-a');
    expectBlazarError(res, 502);
    expect(res.body.error_type).toBe('IdentityServiceError');
  });

  it('should answer 502 when Keystone answers 500 to a token validation', async () => {
    keystone.validation = 'error';
    keystone.validTokens.add('token-b');
    const res = await list('token-b');
    expectBlazarError(res, 502);
    expect(res.body.error_type).toBe('IdentityServiceError');
    expect(res.body.error_message).toContain('500');
  });

  it('should answer 502 when Keystone answers something that is not JSON', async () => {
    keystone.validation = 'garbage';
    keystone.validTokens.add('token-c');
    expectBlazarError(await list('token-c'), 502);
  });

  it('should answer 504 within the timeout when Keystone does not answer', async () => {
    keystone.validation = 'hang';
    keystone.validTokens.add('token-d');
    const started = Date.now();
    const res = await list('token-d');
    expectBlazarError(res, 504);
    expect(res.body.error_type).toBe('IdentityServiceError');
    expect(Date.now() - started).toBeLessThan(3_000);
    keystone.releaseHanging();
  });

  it('should still answer 401 when Keystone says the token is not valid', async () => {
    const res = await list('not-a-token');
    expectBlazarError(res, 401);
    expect(res.body.error_type).toBe('Unauthorized');
  });

  it('should answer 503 when nothing listens at KEYSTONE_URL, and 200 once Keystone is back', async () => {
    keystone.validTokens.add('token-e');
    await keystone.close();
    const res = await list('token-e');
    expectBlazarError(res, 503);
    expect(res.body.error_type).toBe('IdentityServiceError');

    await keystone.listen();
    await list('token-e').expect(200);
    await list('good-token').expect(200);
  });
});
