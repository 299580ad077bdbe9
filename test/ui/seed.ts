import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { TestApp } from '../support/app.js';

/** Callers of the page's tests: an admin, and two projects' members. */
export const TOKENS = {
  admin: { user_id: 'u-admin', project_id: 'p-admin', roles: ['admin'] },
  // Project A may see the host calendar (others' allocations anonymous) by the policy below.
  alice: { user_id: 'u-alice', project_id: 'p-a', roles: ['member', 'reader', 'calendar'] },
  bob: { user_id: 'u-bob', project_id: 'p-b', roles: ['member', 'reader'] },
};

/** The site's rule that opens the host calendar to role "calendar" (issue 26's rules). */
export const POLICY = `"blazar:oshosts:get_allocations": "rule:admin or role:calendar"\n`;

export function authEnv(): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'ui-'));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify(TOKENS));
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  return {
    AUTH_STRATEGY: 'tokens',
    AUTH_TOKENS_FILE: join(dir, 'tokens.json'),
    POLICY_FILE: join(dir, 'policy.yaml'),
    PLUGINS: 'physical:host,virtual:instance',
  };
}

const pad = (n: number) => String(n).padStart(2, '0');
export function inputDate(d: Date): string {
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
  );
}

const HOUR = 3_600_000;

/**
 * Six hosts on two racks, and five leases: A's active, B's pending, A's instance slots, the
 * admin's ending within the day, B's degraded.
 */
export async function seedPool(t: TestApp): Promise<Record<string, string>> {
  for (let i = 1; i <= 6; i++) {
    await t.http
      .post('/v1/os-hosts')
      .set('X-Auth-Token', 'admin')
      .send({
        name: `node-${i}`,
        vcpus: 16,
        memory_mb: 65536,
        local_gb: 500,
        rack: i <= 3 ? 'r1' : 'r2',
      })
      .expect(201);
  }
  const now = Date.now();
  const lease = async (token: string, name: string, start: string, hours: number, r: object) => {
    const res = await t.http
      .post('/v1/leases')
      .set('X-Auth-Token', token)
      .send({
        name,
        start_date: start,
        end_date: inputDate(new Date(now + hours * HOUR)),
        reservations: [r],
      });
    if (res.status !== 201) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
    return (res.body as { lease: { id: string } }).lease.id;
  };
  const host = (properties: string) => ({
    resource_type: 'physical:host',
    min: 1,
    max: 1,
    hypervisor_properties: '',
    resource_properties: properties,
  });
  const ids = {
    alpha: await lease('alice', 'alpha-run', 'now', 48, host('["==", "$rack", "r2"]')),
    beta: await lease(
      'bob',
      'beta-batch',
      inputDate(new Date(now + 24 * HOUR)),
      72,
      host('["==", "$rack", "r2"]'),
    ),
    gamma: await lease('alice', 'gamma-slots', 'now', 30, {
      resource_type: 'virtual:instance',
      amount: 2,
      vcpus: 2,
      memory_mb: 4096,
      disk_gb: 20,
      affinity: null,
      resource_properties: '["==", "$rack", "r2"]',
    }),
  };
  const more = {
    // Ends within the day: drawn as "ending soon".
    epsilon: await lease('admin', 'epsilon-ending', 'now', 10, host('["==", "$rack", "r1"]')),
    delta: await lease('bob', 'delta-degraded', 'now', 40, host('["==", "$rack", "r1"]')),
  };
  // The manager starts what is due: alpha, gamma, delta, epsilon ACTIVE, beta PENDING.
  await t.settle();
  // A host under delta failed (as the healing service marks it): "degraded".
  await t.app
    .get(DataSource)
    .query(`UPDATE leases SET degraded = true WHERE id = $1`, [more.delta]);
  return { ...ids, ...more };
}
