import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const run = promisify(execFile);

// Each client call pays ~1 s of Python start-up.
jest.setTimeout(120_000);

interface CliResult {
  code: number;
  stdout: string;
  /** stdout followed by stderr: the clients print errors on either. */
  out: string;
}

interface WireFloatingIp {
  id: string;
  floating_network_id: string;
  floating_ip_address: string;
}

/** The Debian clients (`blazar floatingip-*`, `openstack reservation floatingip …`), unchanged. */
describe('floating IPs through python-blazarclient and openstackclient', () => {
  let db: TestDatabase;
  let t: TestApp;
  let endpoint: string;
  let home: string;

  async function cli(program: 'blazar' | 'openstack', ...args: string[]): Promise<CliResult> {
    const auth = ['--os-auth-type', 'none', '--os-endpoint', endpoint];
    try {
      const { stdout, stderr } = await run(`/usr/bin/${program}`, [...auth, ...args], {
        env: { PATH: '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8' },
        timeout: 60_000,
      });
      return { code: 0, stdout, out: stdout + stderr };
    } catch (error) {
      const e = error as { code?: unknown; stdout?: string; stderr?: string };
      return {
        code: typeof e.code === 'number' ? e.code : -1,
        stdout: e.stdout ?? '',
        out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
      };
    }
  }
  const blazar = (...args: string[]) => cli('blazar', ...args);
  const osc = (...args: string[]) => cli('openstack', 'reservation', ...args);
  const json = <T>(r: CliResult): T => {
    expect(r.code).toBe(0);
    // Creates print "Created a new floatingip:" on stdout before the JSON.
    return JSON.parse(r.stdout.slice(r.stdout.search(/^[[{]/m))) as T;
  };
  const registered = async () =>
    (await t.http.get('/v1/floatingips').expect(200)).body.floatingips as WireFloatingIp[];

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'climate-cli-'));
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'virtual:floatingip' } });
    await t.app.listen(0, '127.0.0.1');
    const { port } = (t.app.getHttpServer() as { address(): AddressInfo }).address();
    endpoint = `http://127.0.0.1:${port}/v1`;
    t.clock.set(new Date());
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('should register, list, show and delete addresses with blazar floatingip-*', async () => {
    const made = json<WireFloatingIp>(
      await blazar('floatingip-create', '-f', 'json', 'net-cli', '198.51.100.21'),
    );
    expect(made).toMatchObject({
      floating_network_id: 'net-cli',
      floating_ip_address: '198.51.100.21',
    });
    expect((await registered()).map((f) => f.id)).toEqual([made.id]);

    const listed = json<{ id: string }[]>(await blazar('floatingip-list', '-f', 'json'));
    expect(listed.map((f) => f.id)).toEqual([made.id]);
    const shown = json<WireFloatingIp>(await blazar('floatingip-show', '-f', 'json', made.id));
    expect(shown).toMatchObject({ id: made.id, floating_ip_address: '198.51.100.21' });

    const twice = await blazar('floatingip-create', 'net-cli', '198.51.100.21');
    expect(twice.code).not.toBe(0);
    expect(twice.out).toContain(
      'Floating IP 198.51.100.21 is already registered on network net-cli',
    );

    expect((await blazar('floatingip-delete', made.id)).code).toBe(0);
    expect(await registered()).toEqual([]);
    const gone = await blazar('floatingip-show', made.id);
    expect(gone.code).not.toBe(0);
    expect(gone.out).toContain(`Object with {'floatingip_id': '${made.id}'} not found`);
  });

  it('should register addresses and reserve them with openstack reservation', async () => {
    const ids: string[] = [];
    for (const address of ['198.51.100.31', '198.51.100.32']) {
      const made = json<WireFloatingIp>(
        await osc('floatingip', 'create', '-f', 'json', 'net-osc', address),
      );
      ids.push(made.id);
    }
    const listed = json<{ id: string }[]>(await osc('floatingip', 'list', '-f', 'json'));
    expect(listed.map((f) => f.id).sort()).toEqual([...ids].sort());
    const shown = json<WireFloatingIp>(await osc('floatingip', 'show', '-f', 'json', ids[0]));
    expect(shown.floating_network_id).toBe('net-osc');

    const start = new Date(Date.now() + 3600_000).toISOString().slice(0, 16).replace('T', ' ');
    const end = new Date(Date.now() + 7200_000).toISOString().slice(0, 16).replace('T', ' ');
    const lease = await osc(
      'lease',
      'create',
      '-f',
      'json',
      '--start-date',
      start,
      '--end-date',
      end,
      '--reservation',
      'resource_type=virtual:floatingip,network_id=net-osc,amount=2',
      'fip-lease',
    );
    expect(lease.code).toBe(0);
    const leases = (await t.http.get('/v1/leases').expect(200)).body.leases;
    const reservation = leases.find((l: { name: string }) => l.name === 'fip-lease')
      .reservations[0];
    expect(reservation).toMatchObject({
      network_id: 'net-osc',
      amount: 2,
      required_floatingips: [],
    });
    expect(reservation.floatingips.sort()).toEqual(['198.51.100.31', '198.51.100.32']);

    // Both held: a lease for one more over the same hours is refused, with Blazar's words.
    const more = await blazar(
      'lease-create',
      '--start-date',
      start,
      '--end-date',
      end,
      '--reservation',
      'resource_type=virtual:floatingip,network_id=net-osc,amount=1',
      'fip-more',
    );
    expect(more.code).not.toBe(0);
    expect(more.out).toContain('Not enough floating IPs available');
    // Held addresses cannot be deleted.
    const busy = await osc('floatingip', 'delete', ids[0]);
    expect(busy.code).not.toBe(0);
    expect(busy.out).toContain('allocated to a current or future reservation');
  });
});
