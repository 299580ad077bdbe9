// `npm start`: compiles only when a source is newer than dist/ (the first start, or after
// an edit), then runs the service in this very process: npm's SIGTERM reaches it, and
// nothing is left behind when npm is stopped.
import { spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'dist', 'main.js');

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** The newest file tsc compiles (specs are not compiled). */
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
      newest = Math.max(newest, mtime(path));
    }
  }
  return newest;
}

function stale() {
  const sources = Math.max(
    newestSource(join(root, 'src')),
    mtime(join(root, 'tsconfig.json')),
    mtime(join(root, 'tsconfig.build.json')),
  );
  return mtime(main) < sources;
}

/** `npm run build`'s compile, stopped with us if we are stopped meanwhile; null when done. */
function build() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  process.stderr.write('climate: compiling (src/ is newer than dist/)\n');
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  const stop = (signal) => child.kill(signal);
  process.on('SIGTERM', stop).on('SIGINT', stop);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      process.off('SIGTERM', stop).off('SIGINT', stop);
      resolve(signal !== null ? `stopped (${signal})` : code === 0 ? null : 'failed (see above)');
    });
  });
}

const problem = stale() ? await build() : null;
// The web page at /ui/ (scripts/build-ui.mjs), rebuilt when ui/ is newer than its bundle.
if (problem === null) {
  const ui = await import('./build-ui.mjs');
  if (ui.uiStale()) {
    process.stderr.write('climate: building the web page (ui/ is newer than dist-ui/)\n');
    await ui.buildUi();
  }
}
if (problem !== null) {
  // tsc writes its output even on a type error: remove it, so the next start compiles again.
  rmSync(main, { force: true });
  process.stderr.write(`climate: not started: the compile ${problem}\n`);
  process.exit(1);
}
await import(pathToFileURL(main).href);
