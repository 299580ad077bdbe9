/**
 * The scheduler filter is authorised before its body is read, by the route's policy rule
 * as POLICY_FILE has it (not by the admin role alone): a site that gives Nova's service
 * user a role of its own opens the route, large bodies included, to that role only.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const TOKENS = {
  'scheduler-token': { user_id: 'nova', project_id: 'service', roles: ['scheduler'] },
  'member-token': { user_id: 'alice', project_id: 'p1', roles: ['member'] },
};

describe('the scheduler filter under a policy file', () => {
  let db: TestDatabase;
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'climate-filter-policy-'));
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify(TOKENS));
    writeFileSync(join(dir, 'policy.yaml'), '"climate:scheduler:filter": "role:scheduler"\n');
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: join(dir, 'tokens.json'),
        POLICY_FILE: join(dir, 'policy.yaml'),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should take a small and a large body from the role the policy file names', async () => {
    const small = await t.http
      .post('/v1/scheduler/filter')
      .set('X-Auth-Token', 'scheduler-token')
      .send({ project_id: 'p1', hosts: ['not-a-pool-host'] });
    expect(small.status).toBe(200);
    expect(small.body).toEqual({ hosts: ['not-a-pool-host'] });

    // Over 100 KB: read and parsed in the worker, allowed only to the route's callers.
    const hosts = Array.from({ length: 3_000 }, (_, i) => `plain-host-${'y'.repeat(40)}-${i}`);
    const large = await t.http
      .post('/v1/scheduler/filter')
      .set('X-Auth-Token', 'scheduler-token')
      .send({ project_id: 'p1', hosts });
    expect(large.status).toBe(200);
    expect((large.body as { hosts: string[] }).hosts).toHaveLength(3_000);
  });

  it('should refuse a caller the policy file leaves out, naming the rule', async () => {
    const res = await t.http
      .post('/v1/scheduler/filter')
      .set('X-Auth-Token', 'member-token')
      .send({ project_id: 'p1', hosts: ['not-a-pool-host'] });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      error_code: 403,
      error_type: 'PolicyNotAuthorized',
    });
    expect((res.body as { error_message: string }).error_message).toContain(
      'climate:scheduler:filter',
    );
  });
});
