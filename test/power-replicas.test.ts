import type { Client } from 'pg';
import { FakeClock } from '../src/common/clock.js';
import { PowerService } from '../src/power/power.service.js';
import { PowerTransitions } from '../src/power/power-transitions.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { MINUTE, powerLog, powerStates } from './support/power.js';

jest.setTimeout(60_000);

/** The compute service both managers share, counting the power calls it gets. */
class CountingDriver extends MemoryDriver {
  readonly calls: string[] = [];
  override async powerOn(host: string): Promise<void> {
    this.calls.push(`on ${host}`);
    await super.powerOn(host);
  }
  override async powerOff(host: string): Promise<void> {
    this.calls.push(`off ${host}`);
    await super.powerOff(host);
  }
}

describe('the power plan with two managers on one database', () => {
  let db: TestDatabase;
  let client: Client;
  const clock = new FakeClock(new Date('2032-01-01T00:00:00Z'));
  const driver = new CountingDriver();
  const managers: TestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    for (let i = 0; i < 2; i++) {
      managers.push(
        await startApp({
          databaseUrl: db.url,
          clock,
          driver,
          env: {
            PLUGINS: 'physical:host',
            POWER_PLAN: 'on',
            POWER_OFF_IDLE_MINUTES: '30',
            POWER_BOOT_SECONDS: '300',
            POWER_MAX_TRANSITIONS_PER_MINUTE: '4',
            EVENT_CLAIM_TTL_MS: String(10 * MINUTE),
          },
        }),
      );
    }
  });
  afterAll(async () => {
    await client?.end();
    for (const m of managers) await m.close();
    await db?.drop();
  });

  /** Both managers run at once, a minute apart, `minutes` times. */
  async function together(minutes: number): Promise<void> {
    for (let i = 0; i < minutes; i++) {
      clock.advance(MINUTE);
      await Promise.all(managers.map((m) => m.app.get(PowerService).run()));
      for (const m of managers) await m.settle();
    }
  }

  it('should make each transition once, within the budget per minute, and report the same plan', async () => {
    await addHosts(managers[0].http, ['rp-1', 'rp-2', 'rp-3', 'rp-4', 'rp-5', 'rp-6'], () => ({
      set: 'replicas',
    }));
    await together(31);
    // Four in the first minute the hosts could go (the budget), the other two next minute.
    const log = await powerLog(client);
    const stops = Object.values(log).map((entries) => entries[0].at.getTime());
    expect(stops.filter((at) => at === stops[0])).toHaveLength(4);
    await together(1);
    expect(Object.values(await powerStates(client))).toEqual(Array(6).fill('off'));
    expect(driver.calls.sort()).toEqual(
      ['rp-1', 'rp-2', 'rp-3', 'rp-4', 'rp-5', 'rp-6'].map((h) => `off ${h}`),
    );
    for (const entries of Object.values(await powerLog(client))) {
      expect(entries.map((e) => e.state)).toEqual(['stopping', 'off']);
    }

    // A lease two hours ahead: both managers plan the same power-on, made once.
    const start = new Date(clock.now().getTime() + 2 * 60 * MINUTE);
    await managers[1].http
      .post('/v1/leases')
      .send({
        name: 'replicated',
        start_date: start.toISOString(),
        end_date: new Date(start.getTime() + 60 * MINUTE).toISOString(),
        reservations: [hostReservation()],
      })
      .expect(201);
    const plans = await Promise.all(
      managers.map(async (m) => (await m.http.get('/v1/power-plan').expect(200)).body),
    );
    expect(plans[0]).toEqual(plans[1]);
    expect(plans[0].hosts[0].transitions).toEqual([
      { at: formatted(start.getTime() - 5 * MINUTE), to: 'on' },
      { at: formatted(start.getTime() + 60 * MINUTE), to: 'off' },
    ]);
    driver.calls.length = 0;
    await together(2 * 60);
    expect(driver.calls).toEqual(['on rp-1']);
    expect((await powerStates(client))['rp-1']).toBe('on');
  });

  it('should finish a transition whose manager died, once its claim expired', async () => {
    const [a, b] = managers;
    await addHosts(a.http, ['crash-1', 'crash-2'], () => ({ set: 'crash' }));
    await together(31);
    expect(await powerStates(client)).toMatchObject({ 'crash-1': 'off', 'crash-2': 'off' });
    // Both marked always on: manager A begins their power-on and dies before asking Nova.
    const ids = await hostIds(['crash-1', 'crash-2']);
    for (const id of ids) await a.http.put(`/v1/os-hosts/${id}/power`).send({ always_on: true });
    clock.advance(MINUTE);
    const begun = await a.app.get(PowerTransitions).decide();
    expect(begun.map((x) => x.name).sort()).toEqual(['crash-1', 'crash-2']);
    driver.calls.length = 0;

    // While A's claim lasts, B leaves them alone.
    clock.advance(MINUTE);
    await b.app.get(PowerService).run();
    expect(await powerStates(client)).toMatchObject({ 'crash-1': 'booting', 'crash-2': 'booting' });
    expect(driver.calls).toEqual([]);

    // Then B asks for them (never asked: Nova still has them off) and records them on.
    clock.advance(10 * MINUTE);
    await b.app.get(PowerService).run();
    expect(driver.calls.sort()).toEqual(['on crash-1', 'on crash-2']);
    expect(await powerStates(client)).toMatchObject({ 'crash-1': 'on', 'crash-2': 'on' });
    const log = await powerLog(client);
    expect(log['crash-1'].map((e) => e.state)).toEqual(['stopping', 'off', 'booting', 'on']);
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM host_power WHERE claimed_by IS NOT NULL`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('should never power off a host that a concurrent lease takes for a start within its boot', async () => {
    const [a, b] = managers;
    for (let round = 0; round < 5; round++) {
      const names = [1, 2, 3, 4].map((i) => `race-${round}-${i}`);
      await addHosts(a.http, names, () => ({ set: `race-${round}` }));
      // A minute before they may go off; the next run would switch them all off.
      await together(30);
      clock.advance(MINUTE);
      const start = new Date(clock.now().getTime() + 2 * MINUTE).toISOString();
      const end = new Date(clock.now().getTime() + 90 * MINUTE).toISOString();
      // Two managers decide while four leases want these hosts for a start in 2 minutes.
      const [, , ...created] = await Promise.all([
        a.app.get(PowerService).run(),
        b.app.get(PowerService).run(),
        ...[0, 1, 2, 3].map((i) =>
          (i % 2 === 0 ? a : b).http.post('/v1/leases').send({
            name: `race-${round}-${i}`,
            start_date: start,
            end_date: end,
            reservations: [
              hostReservation({ resource_properties: `["==", "$set", "race-${round}"]` }),
            ],
          }),
        ),
      ]);
      const ids = created.filter((r) => r.status === 201).map((r) => r.body.lease.id as string);
      for (const r of created) expect([201, 409]).toContain(r.status);
      const { rows } = await client.query(
        `SELECT h.hypervisor_hostname AS host, hp.state FROM host_allocations ha
           JOIN reservations r ON r.id = ha.reservation_id JOIN hosts h ON h.id = ha.host_id
           JOIN host_power hp ON hp.host_id = ha.host_id
          WHERE r.lease_id = ANY($1::uuid[])`,
        [ids],
      );
      expect(rows.filter((r) => r.state !== 'on')).toEqual([]);
      expect(rows).toHaveLength(ids.length);
      for (const id of ids) await a.http.delete(`/v1/leases/${id}`).expect(204);
    }
  });

  async function hostIds(names: string[]): Promise<string[]> {
    const { rows } = await client.query(
      `SELECT id::text FROM hosts WHERE hypervisor_hostname = ANY($1) ORDER BY id`,
      [names],
    );
    return rows.map((r) => r.id as string);
  }
});

function formatted(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000');
}
