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

  it("should list the instance availability API's windows and book slots in one", async () => {
    const page = await openPage(browser, server.base, 'alice');
    const query = '["==", "$rack", "r1"]';
    // Two big slots, each on its own host, on a rack whose hosts leases hold.
    const size = { vcpus: 2, memory_mb: 65536, disk_gb: 20 };
    await page.selectOption('#find select[name=kind]', 'instance');
    await page.fill('#find input[name=count]', '2');
    await page.fill('#find input[name=requirement]', query);
    await page.fill('#find input[name=duration]', '3h');
    await page.fill('#find input[name=vcpus]', String(size.vcpus));
    await page.fill('#find input[name=memory_mb]', String(size.memory_mb));
    await page.fill('#find input[name=disk_gb]', String(size.disk_gb));
    await page.selectOption('#find select[name=affinity]', 'false');
    await page.click('#find button[type=submit]');
    await page.locator('#windows li').first().waitFor();
    const api = await server.t.http
      .get('/v1/instances/availability')
      .set('X-Auth-Token', 'alice')
      .query({ amount: 2, ...size, affinity: 'false', duration: '180m' })
      .query({ resource_properties: query, limit: 5 })
      .expect(200);
    const windows = (api.body as { availability: Window[] }).availability;
    expect(windows.length).toBeGreaterThan(0);
    const listed = await page.locator('#windows li span').allTextContents();
    expect(listed).toHaveLength(windows.length);
    windows.forEach((w, i) => {
      expect(listed[i]).toContain(w.start_date.slice(0, 16).replace('T', ' '));
      expect(listed[i]).toContain('2 instance slot(s)');
    });
    expect(await page.locator('.vis-item.free-window').count()).toBeGreaterThan(0);

    await page.locator('#windows li button').first().click();
    const confirm = page.locator('#confirm[open]');
    await confirm.waitFor();
    await confirm.locator('input[name=lease_name]').fill('theta-slots');
    await confirm.locator('button[value=book]').click();
    await page
      .locator('#confirm')
      .waitFor({ state: 'hidden' })
      .catch(async () => {
        throw new Error(`not booked: ${await page.locator('.booking-error').textContent()}`);
      });
    const mine = await server.t.http.get('/v1/leases').set('X-Auth-Token', 'alice').expect(200);
    const lease = (
      mine.body as { leases: { name: string; start_date: string; reservations: object[] }[] }
    ).leases.find((l) => l.name === 'theta-slots');
    expect(lease?.start_date.slice(0, 16)).toBe(windows[0].start_date.slice(0, 16));
    expect(lease?.reservations[0]).toMatchObject({
      resource_type: 'virtual:instance',
      amount: 2,
      ...size,
      affinity: false,
    });
    // The slots on two hosts: a bar on each.
    await until('the booked slots are on the calendar', async () => {
      const names = await page.locator('.bar-label').allTextContents();
      return names.filter((n) => n.startsWith('theta-slots')).length === 2;
    });
    await page.close();
  });

  it("should show the API's refusal when a window offered is taken meanwhile", async () => {
    const page = await openPage(browser, server.base, 'alice');
    // Two hosts' worth of slots on rack r1, where a lease holds the third host.
    const reservation = {
      resource_type: 'virtual:instance',
      amount: 2,
      vcpus: 2,
      memory_mb: 65536,
      disk_gb: 20,
      affinity: false,
      resource_properties: '["==", "$rack", "r1"]',
    };
    await page.selectOption('#find select[name=kind]', 'instance');
    await page.fill('#find input[name=count]', '2');
    await page.fill('#find input[name=requirement]', reservation.resource_properties);
    await page.fill('#find input[name=duration]', '1h');
    await page.fill('#find input[name=vcpus]', '2');
    await page.fill('#find input[name=memory_mb]', '65536');
    await page.fill('#find input[name=disk_gb]', '20');
    await page.selectOption('#find select[name=affinity]', 'false');
    await page.click('#find button[type=submit]');
    const first = page.locator('#windows li').first();
    await first.waitFor();
    const label = (await first.locator('button').getAttribute('aria-label')) ?? '';
    const [, start, end] = /from (\S+ \S+) UTC to (\S+ \S+) UTC/.exec(label) ?? [];
    // Bob takes that window first.
    await server.t.http
      .post('/v1/leases')
      .set('X-Auth-Token', 'bob')
      .send({ name: 'iota-first', start_date: start, end_date: end, reservations: [reservation] })
      .expect(201);
    await first.locator('button').click();
    await page.locator('#confirm input[name=lease_name]').fill('iota-late');
    await page.locator('#confirm button[value=book]').click();
    await until('the refusal is shown', async () =>
      ((await page.locator('.booking-error').textContent()) ?? '').includes('Not enough hosts'),
    );
    const mine = await server.t.http.get('/v1/leases').set('X-Auth-Token', 'alice').expect(200);
    const names = (mine.body as { leases: { name: string }[] }).leases.map((l) => l.name);
    expect(names).not.toContain('iota-late');
    await page.close();
  });

  it('should offer no window for slots that never fit, creating nothing', async () => {
    const leases = async () =>
      (
        (await server.t.http.get('/v1/leases').set('X-Auth-Token', 'alice').expect(200)).body as {
          leases: object[];
        }
      ).leases.length;
    const before = await leases();
    const page = await openPage(browser, server.base, 'alice');
    await page.selectOption('select[name=kind]', 'instance');
    await page.fill('#find input[name=count]', '500');
    await page.fill('#find input[name=duration]', '2h');
    await page.click('#find button[type=submit]');
    await until('the answer is shown', async () =>
      ((await page.locator('#windows').textContent()) ?? '').includes('No window'),
    );
    expect(await page.locator('#windows li button').count()).toBe(0);
    expect(await leases()).toBe(before);
    await page.close();
  });
});
