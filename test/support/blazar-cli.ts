import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CliResult {
  code: number;
  /** What it printed, both streams. */
  out: string;
  stdout: string;
}

/**
 * Where python-blazarclient is imported from: Debian's, or a newer source tree given by
 * BLAZARCLIENT_PYTHONPATH (put first on the clients' PYTHONPATH, for both programs).
 */
export const CLIENT_PATH = process.env.BLAZARCLIENT_PYTHONPATH;
const CLIENT_LEASES = `${CLIENT_PATH ?? '/usr/lib/python3/dist-packages'}/blazarclient/v1/shell_commands/leases.py`;

/**
 * python-blazarclient learnt flavor:instance in 4.1; Debian bookworm's 3.5.0 fails in the
 * client itself (KeyError 'resource_type') before sending anything.
 */
export function clientSendsFlavors(): boolean {
  return readFileSync(CLIENT_LEASES, 'utf8').includes('"flavor:instance"');
}

/**
 * The real Debian `blazar` or `openstack` client against `endpoint`, with a clean
 * environment (no OS_* variables, no pyenv); with `token`, Keystone's token is sent as is.
 */
export async function blazarCli(
  program: 'blazar' | 'openstack',
  endpoint: string,
  args: string[],
  token?: string,
): Promise<CliResult> {
  const home = mkdtempSync(join(tmpdir(), 'cli-'));
  const env = {
    PATH: '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    ...(CLIENT_PATH === undefined ? {} : { PYTHONPATH: CLIENT_PATH }),
  };
  const auth =
    token === undefined
      ? ['--os-auth-type', 'none']
      : ['--os-auth-type', 'admin_token', '--os-token', token];
  try {
    const { stdout, stderr } = await run(
      `/usr/bin/${program}`,
      [...auth, '--os-endpoint', endpoint, ...args],
      { env, timeout: 60_000 },
    );
    return { code: 0, out: stdout + stderr, stdout };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      out: `${e.stdout ?? ''}${e.stderr ?? ''}`,
      stdout: e.stdout ?? '',
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** A date as the clients take it: `YYYY-MM-DD HH:MM` in UTC. */
export const minute = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
