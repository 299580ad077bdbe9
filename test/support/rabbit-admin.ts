import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** rabbitmqctl against the machine's broker (the packaged wrapper). */
export async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  return stdout;
}

/**
 * A vhost of this test's own on the machine's broker (guest has every permission on it),
 * so that its exchanges and queues, the `openstack` exchange included, meet no other test.
 */
export class TestVhost {
  readonly name = `climate-test-${randomUUID()}`;
  private readonly users: string[] = [];

  url(user = 'guest', password = 'guest'): string {
    return `amqp://${user}:${password}@127.0.0.1:5672/${encodeURIComponent(this.name)}`;
  }

  async create(): Promise<void> {
    await rabbitmqctl('add_vhost', this.name);
    await rabbitmqctl('set_permissions', '-p', this.name, 'guest', '.*', '.*', '.*');
  }

  /** A user of this vhost; its permissions are what the test sets (none at first). */
  async addUser(): Promise<{ user: string; password: string }> {
    const user = `climate-test-${randomUUID()}`;
    const password = randomUUID();
    await rabbitmqctl('add_user', user, password);
    this.users.push(user);
    return { user, password };
  }

  async drop(): Promise<void> {
    for (const user of this.users) await rabbitmqctl('delete_user', user).catch(() => '');
    await rabbitmqctl('delete_vhost', this.name).catch(() => '');
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A RabbitMQ node of this test's own (own name, ports and data directory), for what must
 * not be done to the shared one: memory alarms, stops.
 */
export class PrivateRabbit {
  readonly node = `climate-test-${randomUUID().slice(0, 8)}@localhost`;
  readonly port = 20_000 + Math.floor(Math.random() * 20_000);
  private dir = '';
  private server: ChildProcess | null = null;

  get url(): string {
    return `amqp://guest:guest@127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), 'climate-rabbit-'));
    await writeFile(join(this.dir, 'plugins'), '[].\n');
    this.server = spawn('/usr/lib/rabbitmq/bin/rabbitmq-server', [], {
      cwd: this.dir,
      stdio: 'ignore',
      detached: true,
      env: {
        ...process.env,
        RABBITMQ_NODENAME: this.node,
        RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
        RABBITMQ_NODE_PORT: String(this.port),
        RABBITMQ_DIST_PORT: String(this.port + 1),
        RABBITMQ_MNESIA_BASE: join(this.dir, 'mnesia'),
        RABBITMQ_LOG_BASE: join(this.dir, 'log'),
        RABBITMQ_CONFIG_FILE: join(this.dir, 'none'),
        RABBITMQ_ADVANCED_CONFIG_FILE: join(this.dir, 'none-advanced.config'),
        RABBITMQ_ENABLED_PLUGINS_FILE: join(this.dir, 'plugins'),
        RABBITMQ_PID_FILE: join(this.dir, 'pid'),
      },
    });
    const deadline = Date.now() + 120_000;
    while (!(await listening(this.port))) {
      if (Date.now() > deadline) throw new Error(`private RabbitMQ ${this.node} did not start`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async ctl(...args: string[]): Promise<string> {
    const { stdout } = await run(
      '/usr/lib/rabbitmq/bin/rabbitmqctl',
      ['-q', '-n', this.node, ...args],
      { timeout: 60_000, env: { ...process.env, HOME: process.env.HOME ?? '/root' } },
    );
    return stdout;
  }

  async stop(): Promise<void> {
    if (this.server === null) return;
    await this.ctl('stop').catch(() => {
      if (this.server?.pid !== undefined) process.kill(-this.server.pid, 'SIGKILL');
    });
    this.server = null;
    await rm(this.dir, { recursive: true, force: true });
  }
}
