import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { launch, openPage, startUiServer, until, type UiServer } from '../support/browser.js';
import { ROOT } from '../support/dist.js';
import { authEnv, seedPool } from './seed.js';

/**
 * `npm run ui:screenshots`: the README's pictures of the page (docs/ui-*.png), taken from a
 * Climate on the test PostgreSQL with the tests' seed. Not a test: nothing is asserted.
 */
const OUT = process.env.UI_SCREENSHOTS_DIR ?? join(ROOT, 'docs');

describe('screenshots of the web page', () => {
  let db: TestDatabase;
  let server: UiServer;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    db = await createTestDatabase();
    server = await startUiServer({ databaseUrl: db.url, env: authEnv() });
    await seedPool(server.t);
    browser = await launch();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.drop();
  });

  it("takes the calendar, the booking form, the capacity chart and a tenant's view", async () => {
    const page = await openPage(browser, server.base, 'admin');
    await page.click('#now');
    await page.waitForLoadState('networkidle');
    await page.waitForTimeout(500);
    await page.locator('#calendar-section').screenshot({ path: join(OUT, 'ui-calendar.png') });
    await page.selectOption('select[name=kind]', 'host');
    await page.fill('#find input[name=count]', '2');
    await page.fill('#find input[name=requirement]', '["==", "$rack", "r2"]');
    await page.fill('#find input[name=duration]', '2d');
    await page.click('#find button[type=submit]');
    await page.locator('#windows li').first().waitFor();
    await page.click('button[data-zoom="week"]');
    await page.setViewportSize({ width: 1400, height: 760 });
    await page.locator('#book').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(OUT, 'ui-booking.png') });
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.click('#capacity-refresh');
    await until('the chart is drawn', async () => (await page.locator('.uplot').count()) > 0);
    await page.locator('#capacity').screenshot({ path: join(OUT, 'ui-capacity.png') });
    await page.click('#now');
    await page.locator('.bar-label', { hasText: 'alpha-run' }).first().click();
    await page.locator('#details[open] table').waitFor();
    await page.locator('#details').screenshot({ path: join(OUT, 'ui-details.png') });
    await page.close();
    // A tenant's view: its own leases named, another project's as "reserved".
    const tenant = await openPage(browser, server.base, 'alice');
    await tenant.click('#now');
    await tenant.waitForLoadState('networkidle');
    await tenant.waitForTimeout(500);
    await tenant.locator('#calendar-section').screenshot({ path: join(OUT, 'ui-tenant.png') });
    await tenant.close();
  }, 120_000);
});
