import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const run = promisify(execFile);
jest.setTimeout(180_000);

interface CliResult {
  code: number;
  out: string;
}

/** The real Debian clients, with a clean environment (no OS_* variables, no pyenv). */
async function cli(
  program: 'blazar' | 'openstack',
  endpoint: string,
  args: string[],
): Promise<CliResult> {
  const env = { PATH: '/usr/bin:/bin', HOME: mkdtempSync(join(tmpdir(), 'cli-')), LANG: 'C.UTF-8' };
  const auth = ['--os-auth-type', 'none', '--os-endpoint', endpoint];
  try {
    const { stdout, stderr } = await run(`/usr/bin/${program}`, [...auth, ...args], {
      env,
      timeout: 60_000,
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
    };
  }
}

const minute = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');

describe('the real blazar and openstack clients', () => {
  let db: TestDatabase;
  let t: TestApp;
  let endpoint: string;
  const blazar = (...args: string[]) => cli('blazar', endpoint, args);
  const openstack = (...args: string[]) => cli('openstack', endpoint, args);

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' },
    });
    t.clock.set(new Date());
    await t.app.listen(0, '127.0.0.1');
    const { port } = (t.app.getHttpServer() as { address(): AddressInfo }).address();
    endpoint = `http://127.0.0.1:${port}/v1`;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function leaseNamed(name: string) {
    const res = await t.http.get('/v1/leases').expect(200);
    return (
      res.body.leases as {
        name: string;
        id: string;
        start_date: string;
        end_date: string;
        status: string;
      }[]
    ).find((l) => l.name === name);
  }

  it('should manage hosts and properties and reserve hosts when driven by the blazar CLI', async () => {
    expect(
      (await blazar('host-create', '--extra', 'vcpus=8', '--extra', 'gpu=True', 'cli-h1')).code,
    ).toBe(0);
    expect((await blazar('host-create', '--extra', 'vcpus=2', 'cli-h2')).code).toBe(0);
    const hosts = (await t.http.get('/v1/os-hosts')).body.hosts as {
      hypervisor_hostname: string;
      vcpus: number;
      gpu?: string;
    }[];
    expect(hosts.find((h) => h.hypervisor_hostname === 'cli-h1')).toMatchObject({
      vcpus: 8,
      gpu: 'True',
    });

    const list = await blazar('host-list');
    expect(list.out).toContain('cli-h1');
    expect((await blazar('host-show', 'cli-h1')).out).toContain('gpu');
    expect((await blazar('host-update', '--extra', 'gpu=False', 'cli-h2')).code).toBe(0);
    const props = await blazar('host-property-list', '--detail');
    expect(props.out).toContain('gpu');
    expect(props.out).toContain("'False', 'True'");
    expect((await blazar('host-property-set', '--private', 'gpu')).code).toBe(0);
    expect((await blazar('host-property-list')).out).not.toContain('gpu');
    await t.http.patch('/v1/os-hosts/properties/gpu').send({ private: false }).expect(200);

    const start = minute(new Date(t.clock.now().getTime() + 3 * 86_400_000));
    const end = minute(new Date(t.clock.now().getTime() + 4 * 86_400_000));
    const reserved = await blazar(
      'lease-create',
      '--start-date',
      start,
      '--end-date',
      end,
      '--physical-reservation',
      'min=1,max=1,hypervisor_properties=[">=", "$vcpus", "4"],resource_properties=["==", "$gpu", "True"]',
      'cli-hosts',
    );
    expect(reserved.code).toBe(0);
    const lease = (await t.http.get(`/v1/leases/${(await leaseNamed('cli-hosts'))?.id}`)).body
      .lease;
    expect(lease.reservations[0]).toMatchObject({
      resource_type: 'physical:host',
      min: 1,
      max: 1,
      resource_properties: '["==", "$gpu", "True"]',
    });
    const alloc = (
      await t.http.get(`/v1/os-hosts/allocations?lease_id=${lease.id}`)
    ).body.allocations.filter((a: { reservations: unknown[] }) => a.reservations.length > 0);
    const h1 = hosts.find((h) => h.hypervisor_hostname === 'cli-h1') as unknown as { id: string };
    expect(alloc.map((a: { resource_id: string }) => a.resource_id)).toEqual([h1.id]);

    const full = await blazar(
      'lease-create',
      '--start-date',
      start,
      '--end-date',
      end,
      '--physical-reservation',
      'min=1,max=1,resource_properties=["==", "$gpu", "True"]',
      'cli-full',
    );
    expect(full.code).not.toBe(0);
    expect(full.out).toContain('Not enough hosts available');

    const busy = await blazar('host-delete', 'cli-h1');
    expect(busy.code).not.toBe(0);
    expect(busy.out).toContain('The host is reserved');
    expect((await blazar('host-delete', 'cli-h2')).code).toBe(0);
    expect(
      (await t.http.get('/v1/os-hosts')).body.hosts.map(
        (h: { hypervisor_hostname: string }) => h.hypervisor_hostname,
      ),
    ).not.toContain('cli-h2');
  });

  it('should list and create through openstack reservation commands', async () => {
    const hosts = await openstack('reservation', 'host', 'list', '-f', 'json');
    expect(hosts.code).toBe(0);
    expect(
      (JSON.parse(hosts.out) as { hypervisor_hostname: string }[]).map(
        (h) => h.hypervisor_hostname,
      ),
    ).toContain('cli-h1');
    const start = minute(new Date(t.clock.now().getTime() + 10 * 86_400_000));
    const end = minute(new Date(t.clock.now().getTime() + 11 * 86_400_000));
    const created = await openstack(
      'reservation',
      'lease',
      'create',
      '--start-date',
      start,
      '--end-date',
      end,
      '--reservation',
      'resource_type=physical:host,min=1,max=1,hypervisor_properties=[">=", "$vcpus", "4"]',
      'osc-lease',
      '-f',
      'json',
    );
    expect(created.code).toBe(0);
    const leases = await openstack('reservation', 'lease', 'list', '-f', 'json');
    expect((JSON.parse(leases.out) as { name: string }[]).map((l) => l.name)).toContain(
      'osc-lease',
    );
  });

  it('should reserve instance slots with --reservation resource_type=virtual:instance', async () => {
    for (const name of ['slot-h1', 'slot-h2', 'slot-h3']) {
      await t.http
        .post('/v1/os-hosts')
        .send({ name, vcpus: 4, memory_mb: 8192, local_gb: 100, tier: 'slots' })
        .expect(201);
    }
    const start = minute(new Date(t.clock.now().getTime() + 20 * 86_400_000));
    const end = minute(new Date(t.clock.now().getTime() + 21 * 86_400_000));
    const created = await blazar(
      'lease-create',
      '--start-date',
      start,
      '--end-date',
      end,
      '--reservation',
      'resource_type=virtual:instance,vcpus=2,memory_mb=4096,disk_gb=20,amount=3,affinity=False',
      'cli-slots',
    );
    expect(created.code).toBe(0);
    const shown = await blazar('lease-show', 'cli-slots');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('"resource_type": "virtual:instance"');
    expect(shown.out).toContain('"amount": 3');
    expect(shown.out).toContain('"affinity": false');
    const lease = (await t.http.get(`/v1/leases/${(await leaseNamed('cli-slots'))?.id}`)).body
      .lease;
    expect(lease.reservations[0]).toMatchObject({
      vcpus: 2,
      memory_mb: 4096,
      disk_gb: 20,
      amount: 3,
      affinity: false,
      resource_properties: '',
    });
    // affinity=False: three slots on three different hosts
    const allocations = (
      await t.http.get(`/v1/os-hosts/allocations?reservation_id=${lease.reservations[0].id}`)
    ).body.allocations as { resource_id: string; reservations: unknown[] }[];
    expect(allocations.filter((a) => a.reservations.length > 0)).toHaveLength(3);
  });
});
