import type { AddressInfo } from 'node:net';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { MemoryDriver } from './support/memory-driver.js';
import { blazarCli, clientSendsFlavors, minute } from './support/blazar-cli.js';

// Each client call pays ~1 s of Python start-up.
jest.setTimeout(180_000);

const DAY = 86_400_000;
const cli = blazarCli;

describe('flavor:instance through the real blazar and openstack clients', () => {
  let db: TestDatabase;
  let t: TestApp;
  let endpoint: string;
  const driver = new MemoryDriver();
  const blazar = (...args: string[]) => cli('blazar', endpoint, args);
  const openstack = (...args: string[]) => cli('openstack', endpoint, args);

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: { PLUGINS: 'physical:host,virtual:instance,flavor:instance', CPU_ALLOCATION_RATIO: '1' },
    });
    t.clock.set(new Date());
    await t.app.listen(0, '127.0.0.1');
    const { port } = (t.app.getHttpServer() as { address(): AddressInfo }).address();
    endpoint = `http://127.0.0.1:${port}/v1`;
    for (const name of ['cli-f1', 'cli-f2']) {
      await t.http
        .post('/v1/os-hosts')
        .send({ name, vcpus: 4, memory_mb: 8192, local_gb: 100 })
        .expect(201);
    }
    // Nova's m1.medium as the clients' docs show it: id "3" (sent as a number by blazar)
    const shown = { id: '3', name: 'm1.medium', vcpus: 2, ram: 4096, disk: 40, extra_specs: {} };
    driver.sourceFlavors.set('3', {
      id: '3',
      name: 'm1.medium',
      vcpus: 2,
      ramMb: 4096,
      diskGb: 40,
      ephemeralGb: 0,
      swapMb: 0,
      extraSpecs: {},
      shown: { ...shown, 'OS-FLV-EXT-DATA:ephemeral': 0 },
      projects: null,
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const window = (fromDay: number) => [
    '--start-date',
    minute(new Date(t.clock.now().getTime() + fromDay * DAY)),
    '--end-date',
    minute(new Date(t.clock.now().getTime() + (fromDay + 1) * DAY)),
  ];
  const leaseNamed = async (name: string) => {
    const leases = (await t.http.get('/v1/leases').expect(200)).body.leases as {
      id: string;
      name: string;
    }[];
    const found = leases.find((l) => l.name === name);
    return found && (await t.http.get(`/v1/leases/${found.id}`).expect(200)).body.lease;
  };

  /** What `--reservation resource_type=flavor:instance,flavor_id=3,amount=N` sends (client 4.1+). */
  const clientBody = (name: string, fromDay: number, amount: number) => ({
    name,
    start_date: minute(new Date(t.clock.now().getTime() + fromDay * DAY)),
    end_date: minute(new Date(t.clock.now().getTime() + (fromDay + 1) * DAY)),
    reservations: [{ resource_type: 'flavor:instance', flavor_id: 3, amount, affinity: 'None' }],
    events: [],
  });

  it('should show, refuse to update and delete a flavor lease through both clients', async () => {
    const created = await t.http
      .post('/v1/leases')
      .send(clientBody('cli-flavor', 3, 2))
      .expect(201);
    const r = created.body.lease.reservations[0];
    expect(r).toMatchObject({ vcpus: 2, memory_mb: 4096, disk_gb: 40, amount: 2, affinity: null });
    expect(JSON.parse(r.resource_properties)).toMatchObject({ id: '3', name: 'm1.medium' });

    const shown = await blazar('lease-show', 'cli-flavor');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('"resource_type": "flavor:instance"');
    expect(shown.out).toContain(`"flavor_id": "${r.id}"`);
    const osc = await openstack('reservation', 'lease', 'show', 'cli-flavor', '-f', 'json');
    expect(osc.code).toBe(0);
    expect(JSON.parse(osc.out).reservations).toContain('"resource_type": "flavor:instance"');

    // two 4-vCPU hosts hold four 2-vCPU servers; three more do not fit beside two
    const full = await t.http.post('/v1/leases').send(clientBody('cli-flavor-full', 3, 3));
    expect(full.status).toBe(409);
    expect(full.body.error_message).toMatch(/^Not enough hosts available/);

    const update = await blazar('lease-update', '--prolong-for', '1h', 'cli-flavor');
    expect(update.code).not.toBe(0);
    expect(update.out).toContain(
      "Updating leases for 'flavor:instance' type reservations is not yet supported.",
    );
    expect((await leaseNamed('cli-flavor')).end_date).toBe(created.body.lease.end_date);

    const deleted = await openstack('reservation', 'lease', 'delete', 'cli-flavor');
    expect(deleted.code).toBe(0);
    expect(await leaseNamed('cli-flavor')).toBeUndefined();
  });

  const clientSends = clientSendsFlavors();
  (clientSends ? it : it.skip)(
    'should reserve by flavor with blazar lease-create and openstack reservation lease create',
    async () => {
      for (const [program, args] of [
        ['blazar', ['lease-create']],
        ['openstack', ['reservation', 'lease', 'create']],
      ] as const) {
        const name = `${program}-flavor`;
        const created = await cli(program, endpoint, [
          ...args,
          ...window(program === 'blazar' ? 10 : 12),
          '--reservation',
          'resource_type=flavor:instance,flavor_id=3,amount=1',
          name,
        ]);
        expect([created.code, created.out]).toEqual([0, expect.any(String)]);
        expect((await leaseNamed(name)).reservations[0]).toMatchObject({
          resource_type: 'flavor:instance',
          amount: 1,
          affinity: null,
          vcpus: 2,
        });
      }
    },
  );

  it('should name the client, not Climate, when an old client cannot send the type', async () => {
    if (clientSends) return;
    const refused = await blazar(
      'lease-create',
      ...window(20),
      '--reservation',
      'resource_type=flavor:instance,flavor_id=3,amount=1',
      'old-client',
    );
    expect(refused.code).toBe(1);
    expect(refused.out.trim().split('\n').at(-1)).toBe("'resource_type'");
    expect(await leaseNamed('old-client')).toBeUndefined();
  });
});
