import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const run = promisify(execFile);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The children of `pid`, read from /proc (the server's backends and helpers). */
function children(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * A PostgreSQL server of the test's own (own data directory under the temp dir, own port,
 * trust auth), to freeze, stop and restart without touching the shared one on 5432.
 */
export class PrivatePostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'climate-pg-'));
    const pg = new PrivatePostgres(dir, await freePort());
    // initdb refuses to run as root: the server then runs as postgres.
    if (process.getuid?.() === 0) {
      const { uid, gid } = postgresUser();
      chownSync(dir, uid, gid);
    }
    await pg.asServer('initdb', ['-D', pg.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
    await pg.startServer();
    const client = new Client({ connectionString: pg.url('postgres') });
    await client.connect();
    await client.query('CREATE DATABASE climate');
    await client.end();
    return pg;
  }

  get data(): string {
    return join(this.dir, 'data');
  }

  url(database = 'climate'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async startServer(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    const log = join(this.dir, 'server.log');
    await this.asServer('pg_ctl', ['-D', this.data, '-o', options, '-l', log, '-w', 'start']);
  }

  /** `fast` (clients told, transactions rolled back) or `immediate` (a crash). */
  async stopServer(mode: 'fast' | 'immediate'): Promise<void> {
    await this.asServer('pg_ctl', ['-D', this.data, '-m', mode, '-w', 'stop']);
  }

  /** The postmaster and every process it started. */
  private processes(): number[] {
    const postmaster = Number(
      readFileSync(join(this.data, 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    return [postmaster, ...children(postmaster)];
  }

  /** The whole server stopped (SIGSTOP): sockets stay open, nothing answers. */
  freeze(): void {
    for (const pid of this.processes()) process.kill(pid, 'SIGSTOP');
  }

  thaw(): void {
    for (const pid of this.processes()) process.kill(pid, 'SIGCONT');
  }

  async destroy(): Promise<void> {
    try {
      this.thaw();
    } catch {
      // not running
    }
    await this.stopServer('immediate').catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async asServer(tool: string, args: string[]): Promise<void> {
    const path = join(BIN, tool);
    if (process.getuid?.() === 0) await run('runuser', ['-u', 'postgres', '--', path, ...args]);
    else await run(path, args);
  }
}

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (line === undefined) throw new Error('no postgres user to run a private server as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
