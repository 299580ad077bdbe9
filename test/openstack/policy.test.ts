/**
 * The default policy rules with tokens from the real Keystone (../shared/openstack):
 * users with the reader, member and admin roles, and a member of another project. Key
 * cells of test/policy-matrix.test.ts. Run with `npm run test:openstack`.
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { startApp, TestApp } from '../support/app.js';
import { createTestDatabase, TestDatabase } from '../support/database.js';
import { keystone, KS, token } from './support.js';

jest.setTimeout(120_000);

describe('who may do what, with Keystone tokens', () => {
  const tag = `pol-${randomUUID().slice(0, 8)}`;
  let db: TestDatabase;
  let t: TestApp;
  let http: TestAgent;
  let admin: string;
  const projects: string[] = [];
  const users: string[] = [];
  const tokens: Record<'reader' | 'member' | 'admin' | 'other', string> = {
    reader: '',
    member: '',
    admin: '',
    other: '',
  };

  async function roleId(name: string): Promise<string> {
    const found = (await keystone(admin, 'GET', `/roles?name=${name}`)).roles as { id: string }[];
    if (found[0] !== undefined) return found[0].id;
    return ((await keystone(admin, 'POST', '/roles', { role: { name } })).role as { id: string })
      .id;
  }

  async function project(name: string): Promise<string> {
    const made = await keystone(admin, 'POST', '/projects', {
      project: { name, domain_id: 'default' },
    });
    const id = (made.project as { id: string }).id;
    projects.push(id);
    return id;
  }

  /** A user with one role on a project, and a token scoped to it. */
  async function user(name: string, role: string, projectId: string, projectName: string) {
    const made = await keystone(admin, 'POST', '/users', {
      user: { name, password: 'pw', domain_id: 'default' },
    });
    const id = (made.user as { id: string }).id;
    users.push(id);
    await keystone(admin, 'PUT', `/projects/${projectId}/users/${id}/roles/${await roleId(role)}`);
    return (await token(name, 'pw', projectName)).token;
  }

  beforeAll(async () => {
    admin = (await token('admin', 'adminpass', 'admin')).token;
    const home = await project(tag);
    const away = await project(`${tag}-b`);
    tokens.reader = await user(`${tag}-reader`, 'reader', home, tag);
    tokens.member = await user(`${tag}-member`, 'member', home, tag);
    tokens.admin = await user(`${tag}-admin`, 'admin', home, tag);
    tokens.other = await user(`${tag}-other`, 'member', away, `${tag}-b`);
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        PLUGINS: 'physical:host',
        AUTH_STRATEGY: 'keystone',
        KEYSTONE_URL: KS,
        SERVICE_USERNAME: 'admin',
        SERVICE_PASSWORD: 'adminpass',
        SERVICE_PROJECT: 'admin',
      },
    });
    t.clock.set(new Date());
    http = request(t.app.getHttpServer());
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    for (const id of users) await keystone(admin, 'DELETE', `/users/${id}`);
    for (const id of projects) await keystone(admin, 'DELETE', `/projects/${id}`);
  });

  const as = (who: keyof typeof tokens) => ({ 'X-Auth-Token': tokens[who] });
  const refused = (rule: string) => ({
    error_type: 'PolicyNotAuthorized',
    error_message: `Policy doesn't allow ${rule} to be performed`,
  });
  const lease = (name: string) => {
    const start = new Date(Date.now() + 3_600_000);
    const end = new Date(start.getTime() + 3_600_000);
    const minute = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
    return { name, start_date: minute(start), end_date: minute(end), reservations: [] };
  };

  it('should let a reader read and not write, and a member write', async () => {
    await http.get('/v1/leases').set(as('reader')).expect(200);
    const denied = await http.post('/v1/leases').set(as('reader')).send(lease('r')).expect(403);
    expect(denied.body).toMatchObject(refused('blazar:leases:post'));
    const made = await http.post('/v1/leases').set(as('member')).send(lease('m')).expect(201);
    const id = (made.body as { lease: { id: string } }).lease.id;
    await http.get(`/v1/leases/${id}`).set(as('reader')).expect(200);
    const del = await http.delete(`/v1/leases/${id}`).set(as('reader')).expect(403);
    expect(del.body).toMatchObject(refused('blazar:leases:delete'));
    // Another project's member is told the lease does not exist.
    await http.get(`/v1/leases/${id}`).set(as('other')).expect(404);
    await http.delete(`/v1/leases/${id}`).set(as('other')).expect(404);
    // Its own lease's hosts, without the calendar rule.
    await http.get(`/v1/os-hosts/allocations?lease_id=${id}`).set(as('reader')).expect(200);
    await http.get(`/v1/os-hosts/allocations?lease_id=${id}`).set(as('other')).expect(403);
    await http.delete(`/v1/leases/${id}`).set(as('member')).expect(204);
  });

  it('should keep the host routes to admins and open availability to readers', async () => {
    const hosts = await http.get('/v1/os-hosts').set(as('member')).expect(403);
    expect(hosts.body).toMatchObject(refused('blazar:oshosts:get'));
    await http.get('/v1/os-hosts').set(as('admin')).expect(200);
    await http.get('/v1/os-hosts/availability?count=1&duration=1h').set(as('reader')).expect(200);
    await http.get('/v1/pools').set(as('member')).expect(403);
  });

  it('should refuse an unscoped token with 401', async () => {
    const res = await fetch(`${KS}/auth/tokens`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ['password'],
            password: {
              user: { name: `${tag}-member`, domain: { id: 'default' }, password: 'pw' },
            },
          },
        },
      }),
    });
    expect(res.status).toBe(201);
    const unscoped = res.headers.get('x-subject-token') as string;
    await http.get('/v1/leases').set('X-Auth-Token', unscoped).expect(401);
  });
});
