import type { Browser } from 'playwright-core';
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

interface Window {
  start_date: string;
  end_date: string;
}

describe('the web page: find a window and book it', () => {
  let db: TestDatabase;
  let server: UiServer;
  let browser: Browser;

  beforeAll(async () => {
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

  it("should list the availability API's windows and book one that then appears", async () => {
    const page = await openPage(browser, server.base, 'alice');
    const query = '["==", "$rack", "r2"]';
    await page.fill('#find input[name=count]', '2');
    await page.fill('#find input[name=requirement]', query);
    await page.fill('#find input[name=duration]', '1d');
    await page.click('#find button[type=submit]');
    await page.locator('#windows li').first().waitFor();
    // The same answer the API gives this caller, in the same order.
    const api = await server.t.http
      .get('/v1/os-hosts/availability')
      .set('X-Auth-Token', 'alice')
      .query({ count: 2, duration: '1440m', resource_properties: query, limit: 5 })
      .expect(200);
    const windows = (api.body as { availability: Window[] }).availability;
    const listed = await page.locator('#windows li span').allTextContents();
    expect(listed).toHaveLength(windows.length);
    expect(listed[0]).toContain(windows[0].start_date.slice(0, 16).replace('T', ' '));
    // Drawn on the calendar behind the bars.
    expect(await page.locator('.vis-item.free-window').count()).toBeGreaterThan(0);
    // Behind the host rows, not the floating IPs' after them (windows of hosts).
    const fips = await page
      .locator('.vis-labelset .vis-label', { hasText: 'floating IPs · network' })
      .first()
      .boundingBox();
    const bottoms = await page
      .locator('.vis-item.free-window')
      .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().bottom));
    expect(fips).not.toBeNull();
    expect(Math.max(...bottoms)).toBeLessThanOrEqual((fips?.y ?? 0) + 1);

    await page.locator('#windows li button').first().click();
    const confirm = page.locator('#confirm[open]');
    await confirm.waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await confirm.locator('input[name=lease_name]').fill('delta-booked');
    await confirm.locator('button[value=book]').click();
    await page
      .locator('#confirm')
      .waitFor({ state: 'hidden' })
      .catch(async () => {
        throw new Error(`not booked: ${await page.locator('.booking-error').textContent()}`);
      });

    const mine = await server.t.http.get('/v1/leases').set('X-Auth-Token', 'alice').expect(200);
    const lease = (mine.body as { leases: { name: string; start_date: string }[] }).leases.find(
      (l) => l.name === 'delta-booked',
    );
    expect(lease?.start_date.slice(0, 16)).toBe(windows[0].start_date.slice(0, 16));
    await until('the booked lease is on the calendar', async () => {
      const names = await page.locator('.bar-label').allTextContents();
      return names.filter((n) => n === 'delta-booked').length === 2;
    });
    await page.close();
  });

  it('should refuse a booking it cannot hold and say why, creating nothing', async () => {
    const page = await openPage(browser, server.base, 'alice');
    await page.selectOption('select[name=kind]', 'instance');
    await page.fill('#find input[name=count]', '500');
    await page.fill('#find input[name=duration]', '2h');
    await page.click('#find button[type=submit]');
    await page.locator('#windows li button').first().click();
    await page.locator('#confirm input[name=lease_name]').fill('too-many-slots');
    await page.locator('#confirm button[value=book]').click();
    await until('the refusal is shown', async () =>
      ((await page.locator('.booking-error').textContent()) ?? '').includes('Not enough hosts'),
    );
    const mine = await server.t.http.get('/v1/leases').set('X-Auth-Token', 'alice').expect(200);
    const names = (mine.body as { leases: { name: string }[] }).leases.map((l) => l.name);
    expect(names).not.toContain('too-many-slots');
    await page.close();
  });
});
