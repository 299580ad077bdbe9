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

/**
 * The site's rules: the host calendar open to role "calendar" (issue 26's rules), and the
 * list of floating IPs too (by default any reader of a project may list them), so that bob
 * is a tenant the API lists no addresses to.
 */
export const POLICY =
  `"blazar:oshosts:get_allocations": "rule:admin or role:calendar"\n` +
  `"blazar:floatingips:get": "rule:admin or role:calendar"\n`;

/** The registered floating IPs, by network. */
export const ADDRESSES: Record<string, string[]> = {
  'net-public': ['203.0.113.10', '203.0.113.11', '203.0.113.12'],
  'net-lab': ['198.51.100.5'],
};

export function authEnv(): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'ui-'));
  writeFileSync(join(dir, 'tokens.json'), JSON.stringify(TOKENS));
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  return {
    AUTH_STRATEGY: 'tokens',
    AUTH_TOKENS_FILE: join(dir, 'tokens.json'),
    POLICY_FILE: join(dir, 'policy.yaml'),
    PLUGINS: 'physical:host,virtual:instance,virtual:floatingip',
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
 * Six hosts on two racks, four floating IPs on two networks, and seven leases: A's active,
 * B's pending, A's instance slots, the admin's ending within the day, B's degraded; A's
 * floating IP (active) and B's two (pending).
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
  for (const [network, addresses] of Object.entries(ADDRESSES)) {
    for (const address of addresses) {
      await t.http
        .post('/v1/floatingips')
        .set('X-Auth-Token', 'admin')
        .send({ floating_network_id: network, floating_ip_address: address })
        .expect(201);
    }
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
    zeta: await lease('alice', 'zeta-address', 'now', 36, {
      resource_type: 'virtual:floatingip',
      network_id: 'net-public',
      amount: 1,
      required_floatingips: [ADDRESSES['net-public'][1]],
    }),
    eta: await lease('bob', 'eta-addresses', inputDate(new Date(now + 12 * HOUR)), 60, {
      resource_type: 'virtual:floatingip',
      network_id: 'net-public',
      amount: 2,
    }),
  };
  // The manager starts what is due: alpha, gamma, delta, epsilon, zeta ACTIVE; beta, eta
  // PENDING.
  await t.settle();
  // A host under delta failed (as the healing service marks it): "degraded".
  await t.app
    .get(DataSource)
    .query(`UPDATE leases SET degraded = true WHERE id = $1`, [more.delta]);
  return { ...ids, ...more };
}
