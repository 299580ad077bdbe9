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
import { ADDRESSES, authEnv, seedPool } from './seed.js';

async function bars(page: Page): Promise<string[]> {
  return page
    .locator('.vis-item .bar-label')
    .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
}

async function rows(page: Page): Promise<string[]> {
  return page.locator('.vis-labelset .vis-label .vis-inner').allTextContents();
}

/** "2030-01-01T10:00:00.000000" as the page shows it: "2030-01-01 10:00 UTC". */
const shown = (wire: string) => `${wire.slice(0, 10)} ${wire.slice(11, 16)} UTC`;

const ALL = Object.values(ADDRESSES).flat();

describe('floating IPs on the calendar at /ui/ (rows by network, bars, who sees what)', () => {
  let db: TestDatabase;
  let server: UiServer;
  let browser: Browser;
  let ids: Record<string, string>;
  /** Each floating-IP lease's addresses and dates, as the API gives them to the admin. */
  const held: Record<string, { addresses: string[]; start: string; end: string }> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startUiServer({ databaseUrl: db.url, env: authEnv() });
    ids = await seedPool(server.t);
    for (const name of ['zeta', 'eta']) {
      const res = await server.t.http
        .get(`/v1/leases/${ids[name]}`)
        .set('X-Auth-Token', 'admin')
        .expect(200);
      const lease = res.body.lease;
      held[name] = {
        addresses: lease.reservations[0].floatingips,
        start: shown(lease.start_date),
        end: shown(lease.end_date),
      };
    }
    browser = await launch();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await db?.drop();
  });

  it('should show an admin every registered address as a row by network, and every bar', async () => {
    expect(held.zeta.addresses).toEqual([ADDRESSES['net-public'][1]]);
    expect(held.eta.addresses).toHaveLength(2);
    const page = await openPage(browser, server.base, 'admin');
    const shownRows = await rows(page);
    expect(shownRows).toEqual(
      expect.arrayContaining([
        'floating IPs · network net-lab',
        'floating IPs · network net-public',
        ...ALL,
      ]),
    );
    // After the hosts' groups.
    expect(shownRows.indexOf('floating IPs · network net-lab')).toBeGreaterThan(
      shownRows.indexOf('node-6'),
    );
    const names = await bars(page);
    const { zeta, eta } = held;
    expect(names).toContain(
      `zeta-address, active, on floating IP ${zeta.addresses[0]}, ${zeta.start} to ${zeta.end}`,
    );
    for (const address of eta.addresses) {
      expect(names).toContain(
        `eta-addresses, pending, on floating IP ${address}, ${eta.start} to ${eta.end}`,
      );
    }
    expect(names.filter((n) => n.includes('on floating IP'))).toHaveLength(3);
    const count = 1 + eta.addresses.length;
    expect(await page.textContent('#calendar-summary')).toMatch(
      new RegExp(`; ${ALL.length} floating IPs, ${count} held$`),
    );
    // A bar opens its lease, the address named.
    const bar = page.locator('.bar-label', { hasText: 'zeta-address' }).first();
    const dialog = page.locator('#details[open]');
    await until('Enter on the floating-IP bar opens its lease', async () => {
      await bar.focus();
      await page.keyboard.press('Enter');
      return dialog.waitFor({ timeout: 2000 }).then(
        () => true,
        () => false,
      );
    });
    expect(await dialog.locator('h2').textContent()).toBe('Lease zeta-address');
    const text = await dialog.locator('dl').textContent();
    expect(text).toContain(`Floating IP${zeta.addresses[0]}`);
    expect(text).toContain(`1 on network net-public: ${zeta.addresses[0]}`);
    await page.keyboard.press('Escape');
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('should show a tenant the API lists addresses to every row but only its own bars', async () => {
    const list = await server.t.http.get('/v1/floatingips').set('X-Auth-Token', 'alice');
    expect(list.status).toBe(200);
    const page = await openPage(browser, server.base, 'alice');
    expect(await rows(page)).toEqual(expect.arrayContaining(ALL));
    const names = (await bars(page)).filter((n) => n.includes('on floating IP'));
    expect(names).toEqual([
      `zeta-address, active, on floating IP ${held.zeta.addresses[0]}, ${held.zeta.start} to ${held.zeta.end}`,
    ]);
    const html = await page.content();
    expect(html).not.toContain('eta-addresses');
    expect(html).not.toContain(ids.eta);
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('should show a tenant the API lists no addresses to only its own leases’ addresses', async () => {
    await server.t.http.get('/v1/floatingips').set('X-Auth-Token', 'bob').expect(403);
    const page = await openPage(browser, server.base, 'bob');
    const addressRows = (await rows(page)).filter((r) => ALL.includes(r));
    expect(addressRows.sort()).toEqual([...held.eta.addresses].sort());
    const names = (await bars(page)).filter((n) => n.includes('on floating IP'));
    expect(names.sort()).toEqual(
      held.eta.addresses
        .map(
          (a) =>
            `eta-addresses, pending, on floating IP ${a}, ${held.eta.start} to ${held.eta.end}`,
        )
        .sort(),
    );
    const html = await page.content();
    expect(html).not.toContain('zeta-address');
    expect(html).not.toContain(held.zeta.addresses[0]);
    expect(html).not.toContain('net-lab');
    await page.close();
  });
});
