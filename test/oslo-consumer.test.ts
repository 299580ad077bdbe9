import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from 'pg';
import { NotificationPublisher } from '../src/notifications/notification-publisher.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { TestVhost } from './support/rabbit-admin.js';
import { createLease, sleep, waitFor } from './support/seed.js';

jest.setTimeout(120_000);

// Debian's python3-oslo.messaging (.ci/run installs it); the system Python, not a venv's.
const PYTHON = '/usr/bin/python3';
const haveOslo =
  existsSync('/usr/lib/python3/dist-packages/oslo_messaging/__init__.py') && existsSync(PYTHON);

/** oslo.messaging's notification listener, with its defaults, on a vhost of the test's own. */
class OsloListener {
  readonly received: { event_type: string; message_id: string }[] = [];
  stderr = '';
  private child: ChildProcess | null = null;

  async start(url: string): Promise<void> {
    const script = join(__dirname, 'support', 'oslo_listener.py');
    const child = spawn(PYTHON, [script, url.replace(/^amqp:/, 'rabbit:'), 'openstack'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let ready = false;
    let buffer = '';
    child.stdout?.on('data', (data: Buffer) => {
      buffer += data.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'ready') ready = true;
        else if (line.startsWith('{')) this.received.push(JSON.parse(line) as never);
      }
    });
    child.stderr?.on('data', (data: Buffer) => (this.stderr += data.toString()));
    await waitFor('the oslo listener', () => (ready ? true : undefined), 60_000);
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

(haveOslo ? describe : describe.skip)(
  'an oslo.messaging consumer on the openstack exchange',
  () => {
    let db: TestDatabase;
    let client: Client;
    const vhosts: TestVhost[] = [];
    const listeners: OsloListener[] = [];
    const apps: TestApp[] = [];

    beforeAll(async () => {
      db = await createTestDatabase();
      client = await connect(db.url);
    });
    afterAll(async () => {
      for (const l of listeners) await l.stop();
      for (const t of apps) await t.close();
      await client?.end();
      await db?.drop();
      for (const v of vhosts) await v.drop();
    });

    async function vhost(): Promise<TestVhost> {
      const v = new TestVhost();
      await v.create();
      vhosts.push(v);
      return v;
    }

    async function listener(url: string): Promise<OsloListener> {
      const l = new OsloListener();
      listeners.push(l);
      await l.start(url);
      return l;
    }

    /** Climate with the default exchange and topic, as in a cloud. */
    async function climate(url: string): Promise<TestApp> {
      const t = await startApp({ databaseUrl: db.url, env: { NOTIFY_URL: url } });
      apps.push(t);
      return t;
    }

    /** `n` leases created and their notifications published; their message ids. */
    async function notify(t: TestApp, n: number): Promise<string[]> {
      await client.query(`DELETE FROM notification_outbox`);
      for (let i = 0; i < n; i++) {
        await createLease(t, {
          name: `oslo-${i}`,
          start: '2030-06-01 00:00',
          end: '2030-06-01 01:00',
        });
      }
      const { rows } = await client.query<{ message_id: string }>(
        `SELECT message_id FROM notification_outbox`,
      );
      expect(await t.app.get(NotificationPublisher).pump()).toBe(n);
      return rows.map((r) => r.message_id);
    }

    async function receivedOnce(l: OsloListener, ids: string[]): Promise<void> {
      await waitFor(
        'oslo to receive them',
        () => (l.received.length >= ids.length ? true : undefined),
        30_000,
      );
      await sleep(500);
      expect(l.received.map((m) => m.message_id).sort()).toEqual([...ids].sort());
      expect(l.received.every((m) => m.event_type === 'lease.create')).toBe(true);
      expect(l.stderr).not.toMatch(/PRECONDITION_FAILED|ACCESS_REFUSED|NOT_FOUND/);
    }

    it('should reach a listener started before Climate, and one started after it', async () => {
      const v = await vhost();
      const before = await listener(v.url());
      const t = await climate(v.url());
      await receivedOnce(before, await notify(t, 3));
      await before.stop();
      // Sent while no consumer runs: oslo's queue keeps them for the next listener.
      const ids = await notify(t, 2);
      const after = await listener(v.url());
      await receivedOnce(after, ids);
    });

    it('should keep what Climate sent before any listener declared anything', async () => {
      const v = await vhost();
      const t = await climate(v.url());
      const ids = await notify(t, 3);
      const late = await listener(v.url());
      await receivedOnce(late, ids);
    });
  },
);
