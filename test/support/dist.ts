import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');
/** The compiled service, for tests that run it as its own process. */
export const MAIN = join(ROOT, 'dist', 'main.js');

function newest(dir: string): number {
  return Math.max(
    0,
    ...readdirSync(dir).map((name) => {
      const path = join(dir, name);
      const stat = statSync(path);
      return stat.isDirectory() ? newest(path) : name.endsWith('.ts') ? stat.mtimeMs : 0;
    }),
  );
}

/** `npm run build`, unless dist/ is newer than every source. */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(MAIN).mtimeMs;
  } catch {
    // not built yet
  }
  if (built < newest(join(ROOT, 'src'))) {
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore', timeout: 300_000 });
  }
}
