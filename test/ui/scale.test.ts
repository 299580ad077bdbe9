import { DataSource } from 'typeorm';
import type { Browser } from 'playwright-core';
import { seed } from '../../bench/seed.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { launch, openPage, startUiServer, until, type UiServer } from '../support/browser.js';

const HOSTS = 1000;
const PER_HOST = 10;

/**
 * 1,000 hosts and 10,000 allocations (the benchmark's seed, a year of them from a month
 * ago): the first view renders, rows and bars of the visible window only. The time it takes
 * is printed (README, "The web page"); it is not asserted, as the machine's load varies.
 */
describe('the web page at scale', () => {
  let db: TestDatabase;
  let server: UiServer;
  let browser: Browser;

  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startUiServer({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
    const from = new Date(Date.now() - 30 * 86_400_000);
    await seed(server.t.app.get(DataSource), HOSTS, PER_HOST, from);
    browser = await launch();
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.drop();
  });

  it('should draw the first view of 1,000 hosts and 10,000 allocations', async () => {
    const started = Date.now();
    const page = await openPage(browser, server.base);
    const ms = Date.now() - started;
    const summary = await page.locator('#calendar-summary').textContent();
    expect(summary).toMatch(new RegExp(`^${HOSTS} hosts, [0-9]+ allocations$`));
    // Only the rows in view hold their bars: a fraction of the window's allocations.
    const drawn = await page.locator('.vis-item.vis-range').count();
    const fetched = Number(/, ([0-9]+) allocations/.exec(summary ?? '')?.[1]);
    expect(drawn).toBeGreaterThan(0);
    expect(drawn).toBeLessThan(fetched);
    const drawnAt = await page.getAttribute('body', 'data-drawn-at');
    process.stdout.write(
      `ui scale: first view of ${HOSTS} hosts drawn ${drawnAt} ms after navigation ` +
        `(${ms} ms with the browser's new page and the later calls settled; ${fetched} ` +
        `allocations fetched for the window, ${drawn} bars drawn)\n`,
    );
    // Scrolled to the end, the last hosts' rows are drawn in place of the first.
    const labels = () => page.locator('.vis-labelset .vis-label .vis-inner').allTextContents();
    expect(await labels()).not.toContain('bench-001000');
    await page.locator('#row-scroll').evaluate((e) => e.scrollTo(0, e.scrollHeight));
    await until('the last row is shown', async () => (await labels()).includes('bench-001000'));
    const position = (await page.locator('#row-position').textContent()) ?? '';
    const [, last, total] =
      /^rows [0-9]+–([0-9]+) of ([0-9]+) \(1000 hosts\)$/.exec(position) ?? [];
    expect(last).toBe(total);
    if (process.env.UI_TIMINGS) {
      const t = await page.evaluate(
        `JSON.stringify(performance.getEntries().map(e => [e.name.slice(-90), Math.round(e.startTime), Math.round(e.duration)]))`,
      );
      process.stdout.write(`${String(t)}\n`);
    }
    await page.close();
  });
});
