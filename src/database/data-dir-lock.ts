import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The embedded database's lock file, in DATA_DIR; it holds the PID of its process. */
export const LOCK_FILE = 'climate.lock';

/** Lock files this process holds: a second open in the same process is refused too. */
const held = new Set<string>();

/** Another live process has the embedded database open. */
export class DataDirLocked extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number | null,
  ) {
    const who = pid === null ? 'an unknown process' : `PID ${pid}`;
    const lock = join(dataDir, LOCK_FILE);
    super(
      `DATA_DIR ${dataDir} is in use by another Climate process (${who}; lock file ${lock}). ` +
        'The embedded database serves one process only: stop that process first, or set ' +
        'DATABASE_URL to a PostgreSQL server to run several. If no Climate process uses ' +
        'the directory, remove the lock file and start again.',
    );
    this.name = 'DataDirLocked';
  }
}

export interface DataDirLock {
  release(): void;
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

function holderOf(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch (error) {
    if (errno(error) === 'ENOENT') return 0;
    throw error;
  }
}

function alive(pid: number, path: string): boolean {
  // Our own PID left by an earlier process is stale unless we hold the lock right now.
  if (pid === process.pid) return held.has(path);
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errno(error) === 'EPERM';
  }
}

/**
 * Takes DATA_DIR for this process: creates the lock file with O_EXCL and writes our PID
 * in it. A lock whose process is gone (a crash) is taken over; a live one is refused with
 * DataDirLocked, naming the directory and the PID.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const dir = resolve(dataDir);
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      held.add(path);
      return { release: () => release(path) };
    } catch (error) {
      if (errno(error) !== 'EEXIST') throw error;
    }
    const holder = holderOf(path);
    if (holder === 0) continue; // gone meanwhile: try again
    // An unreadable PID may be a lock being written this very moment: refuse.
    if (holder === null || alive(holder, path)) throw new DataDirLocked(dir, holder);
    try {
      unlinkSync(path);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
    }
  }
  throw new DataDirLocked(dir, holderOf(path));
}

/** Removes the lock file if it is still ours. */
function release(path: string): void {
  if (!held.delete(path)) return;
  if (holderOf(path) !== process.pid) return;
  try {
    unlinkSync(path);
  } catch (error) {
    if (errno(error) !== 'ENOENT') throw error;
  }
}
