import type { Client } from 'pg';
import { PowerService } from '../src/power/power.service.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { MINUTE, powerStates, runFor } from './support/power.js';

const HOUR = 60 * MINUTE;
const MEMBER = { 'X-Project-Id': 'tenant', 'X-User-Id': 'u1', 'X-Roles': 'member' };

jest.setTimeout(60_000);

describe('the power plan for admins: GET /v1/power-plan, the always-on mark, /metrics', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: {
        PLUGINS: 'physical:host',
        POWER_PLAN: 'on',
        POWER_OFF_IDLE_MINUTES: '30',
        POWER_BOOT_SECONDS: '600',
      },
    });
    client = await connect(db.url);
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  /** Hours a host spent off, summed from its log here (the API sums it in SQL). */
  async function hoursOff(host: string): Promise<number> {
    const { rows } = await client.query<{ state: string; at: Date }>(
      `SELECT pl.state, pl.at FROM power_log pl JOIN hosts h ON h.id = pl.host_id
        WHERE h.hypervisor_hostname = $1 ORDER BY pl.at, pl.id`,
      [host],
    );
    let ms = 0;
    rows.forEach((r, i) => {
      if (r.state === 'off') ms += (rows[i + 1]?.at ?? t.clock.now()).getTime() - r.at.getTime();
    });
    return ms / HOUR;
  }

  const sample = (text: string, line: string) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(`${line} `))
        ?.split(' ')[1],
    );

  it('should keep on hosts with servers, hosts out of the reservation pool and hosts marked always on', async () => {
    t.clock.set(new Date('2034-01-01T00:00:00Z'));
    const [, , shared, marked] = await addHosts(t.http, ['api-1', 'api-2', 'api-3', 'api-4']);
    driver.servers.set('api-2', [
      { id: 'srv', name: 'preempt', projectId: 'x', preemptible: true },
    ]);
    await t.http.put(`/v1/os-hosts/${shared}/pool`).send({ pool: 'shared' }).expect(200);
    const mark = await t.http
      .put(`/v1/os-hosts/${marked}/power`)
      .send({ always_on: true })
      .expect(200);
    expect(mark.body.host).toEqual({
      id: marked,
      hypervisor_hostname: 'api-4',
      power_state: 'on',
      always_on: true,
      holds_servers: false,
      in_plan: false,
      transitions: [],
    });
    await runFor(t, 31);
    expect(await powerStates(client)).toEqual({
      'api-1': 'off',
      'api-2': 'on',
      'api-3': 'on',
      'api-4': 'on',
    });
    expect([...driver.poweredOff]).toEqual(['api-1']);

    // Marked always on while off: back on at the next run, never off again.
    const [first] = (await t.http.get('/v1/os-hosts').expect(200)).body.hosts;
    await t.http.put(`/v1/os-hosts/${first.id}/power`).send({ always_on: 'True' }).expect(200);
    await runFor(t, 120);
    expect((await powerStates(client))['api-1']).toBe('on');
    await t.http.put(`/v1/os-hosts/${first.id}/power`).send({ always_on: false }).expect(200);
  });

  it('should refuse bad marks and non-admins with Blazar error bodies, changing nothing', async () => {
    const [host] = (await t.http.get('/v1/os-hosts').expect(200)).body.hosts;
    const cases: [string, Record<string, unknown>, Record<string, string>, number, string][] = [
      [host.id, { always_on: 'maybe' }, {}, 400, 'MalformedParameter'],
      [host.id, {}, {}, 400, 'MissingParameter'],
      [host.id, { always_on: true, color: 'red' }, {}, 400, 'InvalidInput'],
      ['999999', { always_on: true }, {}, 404, 'NotFound'],
      ['nope', { always_on: true }, {}, 404, 'NotFound'],
      [host.id, { always_on: true }, MEMBER, 403, 'PolicyNotAuthorized'],
    ];
    for (const [id, body, headers, status, name] of cases) {
      const res = await t.http.put(`/v1/os-hosts/${id}/power`).set(headers).send(body);
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ error_code: status, error_type: name });
    }
    const refused = await t.http.get('/v1/power-plan').set(MEMBER).expect(403);
    expect(refused.body).toEqual({
      error_code: 403,
      error_name: 403,
      error_type: 'PolicyNotAuthorized',
      error_message: "Policy doesn't allow climate:power_plan:get to be performed",
    });
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM host_power WHERE always_on`,
    );
    expect(rows[0].n).toBe(1);
  });

  it('should report states, planned transitions and host-hours off, the same in /metrics', async () => {
    // api-1 goes off again (30 idle minutes after its last power-on) and stays off 10 hours.
    await runFor(t, 31, 1);
    expect((await powerStates(client))['api-1']).toBe('off');
    const offSince = t.clock.now().getTime();
    await runFor(t, 10 * 60, 60);
    const start = new Date(t.clock.now().getTime() + 24 * HOUR);
    await t.http
      .post('/v1/leases')
      .send({
        name: 'ahead',
        start_date: start.toISOString(),
        end_date: new Date(start.getTime() + 2 * HOUR).toISOString(),
        reservations: [
          hostReservation({ resource_properties: '["==", "$hypervisor_hostname", "api-1"]' }),
        ],
      })
      .expect(201);
    const plan = (await t.http.get('/v1/power-plan').expect(200)).body;
    const past = round(await hoursOff('api-1'));
    expect(past).toBeGreaterThanOrEqual((t.clock.now().getTime() - offSince) / HOUR);
    // Next 30 days: off until its boot 10 minutes before the start, off again after it.
    const next = 30 * 24 - 2 - 10 / 60;
    expect(plan).toEqual({
      enabled: true,
      off_idle_minutes: 30,
      boot_seconds: 600,
      provisioning_lead_minutes: 0,
      host_hours_off: { past_30_days: past, next_30_days: round(next) },
      power_states: { on: 3, off: 1, booting: 0, stopping: 0 },
      hosts: [
        {
          id: expect.any(String),
          hypervisor_hostname: 'api-1',
          power_state: 'off',
          always_on: false,
          holds_servers: false,
          in_plan: true,
          transitions: [
            { at: wire(start.getTime() - 10 * MINUTE), to: 'on' },
            { at: wire(start.getTime() + 2 * HOUR), to: 'off' },
          ],
        },
        expect.objectContaining({
          hypervisor_hostname: 'api-2',
          power_state: 'on',
          holds_servers: true,
          in_plan: false,
          transitions: [],
        }),
        expect.objectContaining({ hypervisor_hostname: 'api-3', in_plan: false, transitions: [] }),
        expect.objectContaining({ hypervisor_hostname: 'api-4', always_on: true, in_plan: false }),
      ],
    });

    // The gauges are the last power run's: a scrape computes nothing.
    await t.app.get(PowerService).run();
    const text = (await t.http.get('/metrics').expect(200)).text;
    expect(sample(text, 'climate_power_hosts{state="off"}')).toBe(1);
    expect(sample(text, 'climate_power_hosts{state="on"}')).toBe(3);
    expect(sample(text, 'climate_power_off_host_hours{window="past_30_days"}')).toBe(past);
    expect(sample(text, 'climate_power_off_host_hours{window="next_30_days"}')).toBe(round(next));
  });

  it('should bring every host back on when the power plan is turned off', async () => {
    const off = await startApp({
      databaseUrl: db.url,
      driver,
      clock: t.clock,
      env: { PLUGINS: 'physical:host', POWER_PLAN: 'off' },
    });
    try {
      expect((await powerStates(client))['api-1']).toBe('off');
      t.clock.advance(MINUTE);
      await off.app.get(PowerService).run();
      expect(Object.values(await powerStates(client))).toEqual(['on', 'on', 'on', 'on']);
      expect(driver.poweredOff.size).toBe(0);
      const plan = (await off.http.get('/v1/power-plan').expect(200)).body;
      expect(plan.enabled).toBe(false);
      expect(plan.host_hours_off.next_30_days).toBe(0);
    } finally {
      await off.close();
    }
  });
});

function round(hours: number): number {
  return Math.round(hours * 100) / 100;
}

function wire(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000');
}
