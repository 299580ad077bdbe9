// The web page (ui/ → dist-ui/): one esbuild bundle of its TypeScript and CSS (the
// timeline's and chart's styles included), and its index.html. No CDN: everything the page
// loads is in dist-ui/. `node scripts/build-ui.mjs` builds; start.mjs imports uiStale/buildUi.
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'ui');
export const uiOut = join(root, 'dist-ui');
const bundle = join(uiOut, 'app.js');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** True when a file of ui/ (or package.json: a library's version) is newer than the bundle. */
export function uiStale() {
  let built = 0;
  try {
    built = Math.min(statSync(bundle).mtimeMs, statSync(join(uiOut, 'index.html')).mtimeMs);
  } catch {
    return true;
  }
  return built < Math.max(newest(source), statSync(join(root, 'package-lock.json')).mtimeMs);
}

export async function buildUi() {
  const esbuild = await import('esbuild');
  mkdirSync(uiOut, { recursive: true });
  await esbuild.build({
    entryPoints: [join(source, 'src', 'main.ts')],
    bundle: true,
    minify: true,
    sourcemap: true,
    format: 'esm',
    target: ['es2022'],
    outfile: bundle,
    logLevel: 'warning',
    legalComments: 'linked',
  });
  copyFileSync(join(source, 'index.html'), join(uiOut, 'index.html'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = Date.now();
  await buildUi();
  process.stderr.write(`climate: web page built in dist-ui/ (${Date.now() - started} ms)\n`);
}
