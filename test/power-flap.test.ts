/**
 * 200 random lease changes (creates, date moves, deletes) along a fake clock, the power
 * plan and the manager stepping every minute: no lease ever runs on a host that is not
 * on, no host is switched off within the idle time of being switched on, and no minute
 * has more transitions than the budget. Reproduce with POWER_FUZZ_SEED=<n>.
 */
import fc from 'fast-check';
import type { Client } from 'pg';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { activeOnHostsNotOn, MINUTE, powerLog, step } from './support/power.js';

const SEED =
  process.env.POWER_FUZZ_SEED === undefined ? 20_260_201 : Number(process.env.POWER_FUZZ_SEED);
const IDLE_MINUTES = 30;
const BUDGET = 3;

jest.setTimeout(240_000);

type Change =
  | { kind: 'create'; startIn: number; duration: number; hosts: number; wait: number }
  | { kind: 'move'; pick: number; startIn: number; duration: number; wait: number }
  | { kind: 'delete'; pick: number; wait: number };

const change: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      startIn: fc.integer({ min: 0, max: 300 }),
      duration: fc.integer({ min: 10, max: 240 }),
      hosts: fc.integer({ min: 1, max: 3 }),
      wait: fc.integer({ min: 0, max: 6 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('move' as const),
      pick: fc.nat(),
      startIn: fc.integer({ min: 0, max: 300 }),
      duration: fc.integer({ min: 10, max: 240 }),
      wait: fc.integer({ min: 0, max: 6 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('delete' as const),
      pick: fc.nat(),
      wait: fc.integer({ min: 0, max: 6 }),
    }),
  },
);

describe('the power plan under random lease changes', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        PLUGINS: 'physical:host',
        POWER_PLAN: 'on',
        POWER_OFF_IDLE_MINUTES: String(IDLE_MINUTES),
        POWER_BOOT_SECONDS: '300',
        BUILTIN_BOOT_SECONDS: '120',
        PROVISIONING_LEAD_MINUTES: '10',
        POWER_MAX_TRANSITIONS_PER_MINUTE: String(BUDGET),
        MINUTES_BEFORE_END_LEASE: '0',
      },
    });
    client = await connect(db.url);
    t.clock.set(new Date('2033-01-01T00:00:00Z'));
    await addHosts(
      t.http,
      Array.from({ length: 8 }, (_, i) => `fz-${i + 1}`),
    );
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  const at = (minutes: number) =>
    new Date(t.clock.now().getTime() + minutes * MINUTE).toISOString();

  async function apply(c: Change, leases: string[]): Promise<number> {
    if (c.kind === 'create') {
      const res = await t.http.post('/v1/leases').send({
        name: `fz-${leases.length}`,
        start_date: c.startIn === 0 ? 'now' : at(c.startIn),
        end_date: at(c.startIn + c.duration),
        reservations: [hostReservation({ min: 1, max: c.hosts })],
      });
      expect([201, 409]).toContain(res.status);
      if (res.status === 201) leases.push(res.body.lease.id as string);
      return res.status;
    }
    if (leases.length === 0) return 0;
    const id = leases[c.pick % leases.length];
    if (c.kind === 'delete') {
      const res = await t.http.delete(`/v1/leases/${id}`);
      expect([204, 404, 409]).toContain(res.status);
      leases.splice(leases.indexOf(id), 1);
      return res.status;
    }
    const res = await t.http
      .put(`/v1/leases/${id}`)
      .send({ start_date: at(Math.max(1, c.startIn)), end_date: at(c.startIn + c.duration) });
    // Refused when it cannot fit, has started, or has ended.
    expect([200, 400, 404, 409]).toContain(res.status);
    return res.status;
  }

  it('should never run a lease on a host that is not on, nor flap, nor pass the budget', async () => {
    const changes = fc.sample(fc.array(change, { minLength: 200, maxLength: 200 }), {
      seed: SEED,
      numRuns: 1,
    })[0];
    const leases: string[] = [];
    const statuses: number[] = [];
    const violations: string[] = [];
    for (const c of changes) {
      statuses.push(await apply(c, leases));
      for (let m = 0; m <= c.wait; m++) {
        t.clock.advance(MINUTE);
        await step(t);
        violations.push(...(await activeOnHostsNotOn(client)));
      }
    }
    expect(violations).toEqual([]);
    // Enough happened to mean something: leases ran, hosts went off and came back.
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(50);
    const log = await powerLog(client);
    const entries = Object.values(log).flat();
    expect(entries.filter((e) => e.state === 'booting').length).toBeGreaterThan(5);

    for (const [host, list] of Object.entries(log)) {
      for (let i = 0; i < list.length; i++) {
        if (list[i].state !== 'booting') continue;
        const off = list.slice(i + 1).find((e) => e.state === 'stopping');
        if (off === undefined) continue;
        const onFor = off.at.getTime() - list[i].at.getTime();
        if (onFor < IDLE_MINUTES * MINUTE)
          violations.push(`${host} off ${onFor / MINUTE} min after on`);
      }
    }
    const begun = entries
      .filter((e) => e.state === 'booting' || e.state === 'stopping')
      .map((e) => e.at.getTime());
    for (const time of begun) {
      const inMinute = begun.filter((b) => b > time - MINUTE && b <= time).length;
      if (inMinute > BUDGET)
        violations.push(`${inMinute} transitions in the minute to ${new Date(time).toISOString()}`);
    }
    expect(violations).toEqual([]);
  });
});
