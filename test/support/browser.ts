import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { FakeClock } from '../../src/common/clock.js';
import { startApp, type TestApp, type TestAppOptions } from './app.js';
import { ROOT } from './dist.js';

/** Debian's chromium (apt-get install chromium); playwright downloads no browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The server's clock is the real one: the page reads "now" from the browser. */
export class WallClock extends FakeClock {
  override now(): Date {
    return new Date();
  }
}

function newest(dir: string): number {
  return Math.max(
    0,
    ...readdirSync(dir, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs,
    ),
  );
}

/** `node scripts/build-ui.mjs` unless dist-ui/ is newer than ui/ (as npm start does). */
export function ensureUiBuilt(): void {
  const bundle = join(ROOT, 'dist-ui', 'app.js');
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= newest(join(ROOT, 'ui'))) return;
  execFileSync(process.execPath, ['scripts/build-ui.mjs'], { cwd: ROOT, stdio: 'ignore' });
}

export interface UiServer {
  t: TestApp;
  base: string;
  close(): Promise<void>;
}

/** A full Climate on a test database, listening on a free loopback port, page built. */
export async function startUiServer(options: TestAppOptions): Promise<UiServer> {
  ensureUiBuilt();
  const t = await startApp({ clock: new WallClock(), ...options });
  await t.app.listen(0, '127.0.0.1');
  const { port } = t.app.getHttpServer().address() as AddressInfo;
  return { t, base: `http://127.0.0.1:${port}`, close: () => t.close() };
}

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/** Opens the page (signed in with `token` when given) and waits for the calendar's data. */
export async function openPage(browser: Browser, base: string, token?: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(10_000);
  page.on('pageerror', (error) => {
    throw error;
  });
  if (token !== undefined) {
    await page.addInitScript(`sessionStorage.setItem('climate.token', ${JSON.stringify(token)})`);
  }
  await page.goto(`${base}/ui/`);
  // Loaded, or a failure the page reports in its status line (then the test says which).
  await page.waitForSelector('body[data-loaded="true"], #status:not(:empty)', { timeout: 25_000 });
  if ((await page.getAttribute('body', 'data-loaded')) !== 'true') {
    throw new Error(`the page says: ${await page.textContent('#status')}`);
  }
  // And the calls after the calendar's (capacity, power plan) answered and drawn.
  await page.waitForLoadState('networkidle');
  return page;
}

/** axe-core's serious and critical violations on the page, as "id: target" lines. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol: the page's own CSP (scripts from 'self') stays on.
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const results = await page.evaluate<{
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  }>('axe.run()');
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** Polls `check` until it is true (the page redraws after its calls return). */
export async function until(what: string, check: () => Promise<boolean>, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
