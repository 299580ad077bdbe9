import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { serve } from '../src/observability/serve.js';
import { createTestDatabase, TestDatabase } from './support/database.js';

jest.setTimeout(90_000);

const TOKENS = {
  'tok-admin': { user_id: 'ops', project_id: 'admin-project', roles: ['admin'] },
  'tok-member': { user_id: 'm1', project_id: 'p1', roles: ['member'] },
  'tok-scraper': { user_id: 'prometheus', project_id: 'monitoring', roles: ['metrics'] },
};
const REFUSED = {
  error_code: 403,
  error_name: 403,
  error_type: 'PolicyNotAuthorized',
  error_message: "Policy doesn't allow climate:metrics:get to be performed",
};

function file(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'metrics-policy-')), name);
  writeFileSync(path, text);
  return path;
}

async function get(url: string, token?: string): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = token === undefined ? {} : { 'X-Auth-Token': token };
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
}

/** The error body of a refusal, whichever of Blazar's shapes the filter wraps it in. */
function refusal(text: string): unknown {
  const body = JSON.parse(text) as Record<string, unknown>;
  return {
    error_code: body.error_code,
    error_name: body.error_name,
    error_type: body.error_type,
    error_message: body.error_message,
  };
}

describe('climate:metrics:get: /metrics on the API port under a policy', () => {
  let db: TestDatabase;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });

  /** A ROLE=all app with Keystone-like tokens; METRICS_PORT only when given. */
  async function listening(options: { policy?: string; metricsPort?: string } = {}) {
    const config: Config = {
      ...loadConfig({
        DATABASE_URL: db.url,
        ROLE: 'all',
        PORT: '0',
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: file('tokens.json', JSON.stringify(TOKENS)),
        POLICY_FILE: options.policy === undefined ? undefined : file('policy.yaml', options.policy),
        METRICS_PORT: options.metricsPort,
        LOG_LEVEL: 'error',
      }),
      managerTimer: false,
    };
    const app = await buildApp(config, { clock: new FakeClock(new Date()), logger: false });
    apps.push(app);
    const at = await serve(app, config);
    return { api: `http://${at.api}`, ops: at.ops === null ? null : `http://${at.ops}` };
  }

  it('should serve metrics to an admin only by default, and keep the probes open', async () => {
    const { api, ops } = await listening();
    expect(ops).toBeNull();
    const admin = await get(`${api}/metrics`, 'tok-admin');
    expect(admin.status).toBe(200);
    expect(admin.text).toContain('climate_http_request_duration_seconds');

    const member = await get(`${api}/metrics`, 'tok-member');
    expect(member.status).toBe(403);
    expect(refusal(member.text)).toEqual(REFUSED);
    // No token at all: Keystone's 401, as on every other route.
    const anonymous = await get(`${api}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).not.toContain('climate_');

    for (const probe of ['/healthz', '/readyz']) {
      expect((await get(`${api}${probe}`)).status).toBe(200);
    }
  });

  it('should let a scraper without a token in when POLICY_FILE sets the rule to "@"', async () => {
    const { api } = await listening({ policy: '"climate:metrics:get": "@"\n' });
    const anonymous = await get(`${api}/metrics`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.text).toContain('climate_http_request_duration_seconds');
    // The rest of the API still asks for a token.
    expect((await get(`${api}/v1/leases`)).status).toBe(401);
  });

  it('should follow a POLICY_FILE that gives metrics to a role of its own', async () => {
    const { api } = await listening({
      policy: '"climate:metrics:get": "rule:admin or role:metrics"\n',
    });
    expect((await get(`${api}/metrics`, 'tok-scraper')).status).toBe(200);
    expect((await get(`${api}/metrics`, 'tok-admin')).status).toBe(200);
    const member = await get(`${api}/metrics`, 'tok-member');
    expect(member.status).toBe(403);
    expect(refusal(member.text)).toEqual(REFUSED);
    expect((await get(`${api}/metrics`)).status).toBe(401);
  });

  it('should leave METRICS_PORT open to anyone while the API port asks for the rule', async () => {
    const { api, ops } = await listening({ metricsPort: '0' });
    expect(ops).not.toBeNull();
    const scraped = await get(`${ops}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain('climate_http_request_duration_seconds');
    // A token the rule refuses changes nothing there either.
    expect((await get(`${ops}/metrics`, 'tok-member')).status).toBe(200);
    expect((await get(`${ops}/healthz`)).status).toBe(200);
    expect((await get(`${api}/metrics`)).status).toBe(401);
    expect((await get(`${api}/metrics`, 'tok-member')).status).toBe(403);
  });
});
