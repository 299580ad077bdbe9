import type { Browser, Page } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import {
  launch,
  openPage,
  seriousViolations,
  startUiServer,
  until,
  type UiServer,
} from '../support/browser.js';
import { authEnv, seedPool } from './seed.js';

/** The bars' accessible names (lease, status, host, dates), as a screen reader gets them. */
async function bars(page: Page): Promise<string[]> {
  return page
    .locator('.vis-item .bar-label')
    .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
}

async function rows(page: Page): Promise<string[]> {
  return page.locator('.vis-labelset .vis-label .vis-inner').allTextContents();
}

describe('the web page at /ui/ (calendar, tenant and admin views, zoom, filter)', () => {
  let db: TestDatabase;
  let server: UiServer;
  let browser: Browser;
  let ids: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startUiServer({ databaseUrl: db.url, env: authEnv() });
    ids = await seedPool(server.t);
    browser = await launch();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.drop();
  });

  it('should ask for a token, and serve no API data without one', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.base}/ui/`);
    await page.waitForSelector('#sign-in:not([hidden])');
    expect(await page.locator('#app').isHidden()).toBe(true);
    const api = await page.evaluate(async () => (await fetch('/v1/os-hosts/allocations')).status);
    expect(api).toBe(401);
    // The static files carry a CSP that keeps the page to its own origin.
    const res = await page.request.get(`${server.base}/ui/`);
    expect(res.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.close();
  });

  it("should show an admin every lease's bars, named, on hosts grouped by pool and rack", async () => {
    const page = await openPage(browser, server.base, 'admin');
    const names = await bars(page);
    expect(names.some((n) => n.startsWith('alpha-run, active, on node-'))).toBe(true);
    expect(names.some((n) => n.startsWith('beta-batch, pending, on node-'))).toBe(true);
    // Instance reservations as the slots they hold on a host.
    expect(names.some((n) => /^gamma-slots \(2 slots\), active, on node-[456], /.test(n))).toBe(
      true,
    );
    expect(names.some((n) => n.startsWith('epsilon-ending, ending soon, on node-'))).toBe(true);
    expect(names.some((n) => n.startsWith('delta-degraded, degraded, on node-'))).toBe(true);
    // Colours by status: the class each bar is drawn with.
    expect(await page.locator('.vis-item.bar-degraded').count()).toBe(1);
    expect(await page.locator('.vis-item.bar-ending').count()).toBe(1);
    expect(await rows(page)).toEqual(
      expect.arrayContaining([
        'reservation pool · rack r1',
        'reservation pool · rack r2',
        'node-1',
      ]),
    );
    // The power plan (admins): hosts on and off as a chart, with a summary as its label.
    await page.locator('#power:not([hidden]) #power-plan table').waitFor();
    expect(await page.locator('#power-chart canvas').count()).toBe(1);
    expect(await page.getAttribute('#power-chart', 'aria-label')).toContain('Hosts on: 6');
    await page.close();
  });

  it("should show a tenant its own leases named and another project's only as reserved", async () => {
    const page = await openPage(browser, server.base, 'alice');
    const names = await bars(page);
    expect(names.some((n) => n.startsWith('alpha-run, active, on node-'))).toBe(true);
    expect(names.some((n) => n.startsWith('reserved, reserved (another project), on node-'))).toBe(
      true,
    );
    const html = await page.content();
    expect(html).not.toContain('beta-batch');
    expect(html).not.toContain(ids.beta);
    expect(await page.locator('#power').isHidden()).toBe(true);
    await page.close();
  });

  it('should show a tenant the host calendar refuses only its own leases', async () => {
    const page = await openPage(browser, server.base, 'bob');
    const names = await bars(page);
    expect(names.length).toBeGreaterThan(0);
    expect(
      names.filter(
        (n) =>
          !/^(beta-batch, pending|delta-degraded, degraded), on node-/.test(n) &&
          !n.startsWith('eta-addresses, pending, on floating IP '),
      ),
    ).toEqual([]);
    expect(names.some((n) => n.startsWith('beta-batch'))).toBe(true);
    expect(await page.content()).not.toContain('alpha-run');
    await page.close();
  });

  it('should zoom from a week to hours and back, and filter hosts with the requirement language', async () => {
    const page = await openPage(browser, server.base, 'admin');
    // beta starts in a day: out of a 12-hour window around now, back in a month's.
    await page.click('button[data-zoom="hours"]');
    await page.click('#now');
    const beta = async () => (await bars(page)).some((n) => n.startsWith('beta-batch'));
    await until('beta is out of the window', async () => !(await beta()));
    await page.click('button[data-zoom="month"]');
    await until('beta is back in the window', beta);
    await page.fill('#requirement', '["==", "$rack", "r1"]');
    await page.click('#filter button[type=submit]');
    await until('only rack r1 is shown', async () => {
      const now = await rows(page);
      return now.includes('node-1') && !now.includes('node-4');
    });
    const shown = await rows(page);
    expect(shown).toEqual(expect.arrayContaining(['node-1', 'node-2', 'node-3']));
    expect(shown.filter((r) => r.startsWith('node-'))).toHaveLength(3);
    await page.close();
  });

  it('should open a bar from the keyboard with its lease and events, and pass axe', async () => {
    const page = await openPage(browser, server.base, 'admin');
    // Tab from the toolbar's last control reaches the first bar (tried again: during one of
    // the timeline's redraws, seen once in a few runs, Tab passed over its items).
    await until('Tab from the toolbar reaches a bar', async () => {
      await page.focus('#filter button[type=submit]');
      await page.keyboard.press('Tab');
      return (await page.evaluate('document.activeElement.className')) === 'bar-label';
    });
    // Each bar is in the tab order, as a button named by its lease, host and dates.
    const bar = page.locator('.bar-label', { hasText: 'alpha-run' }).first();
    expect(await bar.getAttribute('tabindex')).toBe('0');
    expect(await bar.getAttribute('role')).toBe('button');
    // Focused, its outline shows; Enter opens it. (The timeline may be mid-redraw, its
    // frame detached, at a first try: then again.)
    const dialog = page.locator('#details[open]');
    await until('Enter on a focused bar opens its lease', async () => {
      await bar.focus();
      const focused = await bar.evaluate((e) => e === e.ownerDocument.activeElement);
      if (!focused) return false;
      const style = await bar.evaluate(
        (e) => e.ownerDocument.defaultView?.getComputedStyle(e).outlineStyle,
      );
      expect(style).toBe('solid');
      await page.keyboard.press('Enter');
      return dialog.waitFor({ timeout: 2000 }).then(
        () => true,
        () => false,
      );
    });
    expect(await dialog.locator('h2').textContent()).toBe('Lease alpha-run');
    expect(await dialog.locator('table').textContent()).toContain('start_lease');
    await page.keyboard.press('Escape');
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });
});
