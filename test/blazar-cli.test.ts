import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const run = promisify(execFile);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// Each client call pays ~1 s of Python start-up.
jest.setTimeout(120_000);

interface CliResult {
  code: number;
  stdout: string;
  /** stdout followed by stderr: the clients print errors on either. */
  out: string;
}

interface WireLease {
  id: string;
  name: string;
  start_date: string;
  end_date: string;
  status: string;
  reservations: unknown[];
}

/** "YYYY-MM-DD HH:MM" in UTC, the only input format the client accepts. */
const minute = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
/** Wire dates are naive UTC "YYYY-MM-DDTHH:MM:SS.ffffff". */
const wireMs = (s: string) => Date.parse(`${s.slice(0, 23)}Z`);

describe('python-blazarclient and openstackclient against a listening Climate', () => {
  let db: TestDatabase;
  let t: TestApp;
  let endpoint: string;
  let home: string;

  /** The Debian clients with /usr/bin/python3's environment: no OS_* variables, no pyenv. */
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

  async function leases(): Promise<WireLease[]> {
    return (await t.http.get('/v1/leases').expect(200)).body.leases as WireLease[];
  }
  async function named(name: string): Promise<WireLease | undefined> {
    return (await leases()).find((l) => l.name === name);
  }
  async function show(id: string): Promise<WireLease> {
    return (await t.http.get(`/v1/leases/${id}`).expect(200)).body.lease as WireLease;
  }

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'climate-cli-'));
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
    await t.app.listen(0, '127.0.0.1');
    const { port } = (t.app.getHttpServer() as { address(): AddressInfo }).address();
    endpoint = `http://127.0.0.1:${port}/v1`;
  });
  beforeEach(() => {
    // The client computes "now" and its defaults from real time.
    t.clock.set(new Date());
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('should create, list and show leases by name when driven by the blazar CLI', async () => {
    const start = new Date(Date.now() + 2 * DAY);
    const end = new Date(start.getTime() + DAY);
    const explicit = await blazar(
      'lease-create',
      '--start-date',
      minute(start),
      '--end-date',
      minute(end),
      'cli-explicit',
    );
    expect(explicit.code).toBe(0);
    expect(explicit.out).toContain('Created a new lease:');
    const a = await named('cli-explicit');
    expect(a).toMatchObject({
      status: 'PENDING',
      reservations: [],
      start_date: `${minute(start).replace(' ', 'T')}:00.000000`,
      end_date: `${minute(end).replace(' ', 'T')}:00.000000`,
    });
    expect(explicit.out).toContain(a?.id);

    // No --end-date: the client sends its own default, now + 24 h.
    const sent = Date.now();
    const now = await blazar('lease-create', '--start-date', 'now', 'cli-now');
    expect(now.code).toBe(0);
    const b = await named('cli-now');
    expect(b?.status).toBe('PENDING');
    const serverNow = Math.floor(t.clock.now().getTime() / 60_000) * 60_000;
    expect(wireMs(b?.start_date as string)).toBe(serverNow);
    const endMs = wireMs(b?.end_date as string);
    expect(endMs).toBeGreaterThanOrEqual(Math.floor(sent / 60_000) * 60_000 + DAY - 2 * 60_000);
    expect(endMs).toBeLessThanOrEqual(Date.now() + DAY);

    const list = await blazar('lease-list');
    expect(list.code).toBe(0);
    for (const lease of [a, b]) {
      expect(list.out).toContain(lease?.id);
      expect(list.out).toContain(lease?.name);
    }

    const shown = await blazar('lease-show', 'cli-explicit');
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(new RegExp(`\\|\\s*id\\s*\\|\\s*${a?.id}\\s*\\|`));
    expect(shown.out).toContain(a?.start_date);
    expect(shown.out).toContain(a?.end_date);
  });

  it('should prolong, rename, defer and reduce a pending lease when updated by the blazar CLI', async () => {
    const start = new Date(Date.now() + 3 * DAY);
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'cli-upd',
        start_date: minute(start),
        end_date: minute(new Date(start.getTime() + DAY)),
      })
      .expect(201);
    const id = created.body.lease.id as string;
    const before = await show(id);

    const prolonged = await blazar('lease-update', '--prolong-for', '1h', 'cli-upd');
    expect(prolonged.code).toBe(0);
    expect(prolonged.out).toContain('Updated lease: cli-upd');
    let lease = await show(id);
    expect(wireMs(lease.end_date) - wireMs(before.end_date)).toBe(HOUR);
    expect(lease.start_date).toBe(before.start_date);

    expect((await blazar('lease-update', '--name', 'cli-renamed', 'cli-upd')).code).toBe(0);
    lease = await show(id);
    expect(lease.name).toBe('cli-renamed');
    expect(await named('cli-upd')).toBeUndefined();

    expect((await blazar('lease-update', '--defer-by', '2h', 'cli-renamed')).code).toBe(0);
    lease = await show(id);
    expect(wireMs(lease.start_date) - wireMs(before.start_date)).toBe(2 * HOUR);
    expect(wireMs(lease.end_date) - wireMs(before.end_date)).toBe(HOUR);

    expect((await blazar('lease-update', '--reduce-by', '30m', 'cli-renamed')).code).toBe(0);
    lease = await show(id);
    expect(wireMs(lease.start_date) - wireMs(before.start_date)).toBe(2 * HOUR);
    expect(wireMs(lease.end_date) - wireMs(before.end_date)).toBe(30 * 60_000);
    expect(lease.status).toBe('PENDING');
  });

  it('should delete a lease by name when the blazar CLI asks', async () => {
    const start = new Date(Date.now() + 4 * DAY);
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'cli-doomed',
        start_date: minute(start),
        end_date: minute(new Date(start.getTime() + DAY)),
      })
      .expect(201);
    const id = created.body.lease.id as string;

    const deleted = await blazar('lease-delete', 'cli-doomed');
    expect(deleted.code).toBe(0);
    expect(deleted.out).toContain('Deleted lease: cli-doomed');
    await t.http.get(`/v1/leases/${id}`).expect(404);
    expect(await named('cli-doomed')).toBeUndefined();

    // Names resolve client-side through the list, so a gone name is the client's error.
    const again = await blazar('lease-show', 'cli-doomed');
    expect(again.code).not.toBe(0);
    expect(again.out).toContain("Unable to find resource with name 'cli-doomed'");
  });

  it('should store and show the events of blazar lease-create --event, and never run them', async () => {
    const start = new Date(Date.now() + 3 * DAY);
    const at = minute(new Date(start.getTime() + HOUR));
    const res = await blazar(
      'lease-create',
      '--start-date',
      minute(start),
      '--end-date',
      minute(new Date(start.getTime() + DAY)),
      '--event',
      `event_type=notification,event_date=${at}`,
      'cli-events',
    );
    expect(res.code).toBe(0);
    const lease = (await named('cli-events')) as WireLease & {
      events: { event_type: string; time: string | null; status: string | null }[];
    };
    expect(lease.status).toBe('PENDING');
    expect(lease.events.map((e) => e.event_type)).toEqual([
      'start_lease',
      'before_end_lease',
      'end_lease',
      'notification',
    ]);
    expect(lease.events[3]).toMatchObject({
      time: `${at.replace(' ', 'T')}:00.000000`,
      status: null,
    });
    const shown = await blazar('lease-show', 'cli-events');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('notification');
  });

  it('should print the server error and exit non-zero when the start date is in the past', async () => {
    const count = (await leases()).length;
    const res = await blazar(
      'lease-create',
      '--start-date',
      '2000-01-01 10:00',
      '--end-date',
      '2000-01-02 10:00',
      'cli-past',
    );
    expect(res.code).not.toBe(0);
    expect(res.out).toContain('Start date must be later than current date');
    expect(await named('cli-past')).toBeUndefined();
    expect(await leases()).toHaveLength(count);
  });

  it('should list the leases as JSON when asked through openstack reservation lease list', async () => {
    const res = await cli('openstack', 'reservation', 'lease', 'list', '-f', 'json');
    expect(res).toMatchObject({ code: 0 });
    const listed = JSON.parse(res.stdout) as Record<string, string>[];
    const api = await leases();
    expect(listed.map((l) => l.id).sort()).toEqual(api.map((l) => l.id).sort());
    const row = listed.find((l) => l.name === 'cli-explicit');
    const lease = api.find((l) => l.name === 'cli-explicit');
    expect(row).toMatchObject({
      id: lease?.id,
      start_date: lease?.start_date,
      end_date: lease?.end_date,
    });
  });
});
