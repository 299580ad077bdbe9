import type { Client } from 'pg';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import {
  activeOnHostsNotOn,
  MINUTE,
  powerLog,
  powerStates,
  runFor,
  startsOnHostsNotOn,
  step,
} from './support/power.js';

const HOUR = 60 * MINUTE;

jest.setTimeout(60_000);

/**
 * The power plan on the builtin driver and a fake clock: idle hosts 60 minutes, boots
 * planned at 5 minutes (the builtin driver takes 2), leases prepared 10 minutes ahead.
 */
describe('the power plan on a sparse backlog', () => {
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
        POWER_OFF_IDLE_MINUTES: '60',
        POWER_BOOT_SECONDS: '300',
        BUILTIN_BOOT_SECONDS: '120',
        PROVISIONING_LEAD_MINUTES: '10',
      },
    });
    client = await connect(db.url);
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  const wire = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');

  function lease(name: string, start: Date, end: Date, values: Record<string, unknown> = {}) {
    return t.http.post('/v1/leases').send({
      name,
      start_date: wire(start),
      end_date: wire(end),
      reservations: [
        hostReservation({ resource_properties: '["==", "$set", "sparse"]', ...values }),
      ],
    });
  }

  async function poolOf(host: string): Promise<{ name: string; metadata: Record<string, string> }> {
    const pools = (await t.http.get('/v1/pools').expect(200)).body.pools as {
      name: string;
      hosts: string[];
      metadata: Record<string, string>;
    }[];
    const pool = pools.find((p) => p.hosts.includes(host) && p.name !== `set:sparse`);
    return { name: pool?.name ?? 'none', metadata: pool?.metadata ?? {} };
  }

  it('should power idle hosts off and on again in time for each start', async () => {
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await addHosts(t.http, ['sp-1', 'sp-2', 'sp-3'], () => ({ set: 'sparse' }));
    await step(t);
    // Just registered: on for the idle time first.
    expect(await powerStates(client)).toEqual({ 'sp-1': 'on', 'sp-2': 'on', 'sp-3': 'on' });
    await runFor(t, 60);
    expect(await powerStates(client)).toEqual({ 'sp-1': 'off', 'sp-2': 'off', 'sp-3': 'off' });

    const start = new Date(t.clock.now().getTime() + 3 * HOUR);
    const created = await lease('sparse-1', start, new Date(start.getTime() + HOUR)).expect(201);
    const reservationId = created.body.lease.reservations[0].id as string;

    // Off until 15 minutes (boot 5 + lead 10) before the start.
    await runFor(t, 3 * 60 - 16);
    expect(Object.values(await powerStates(client))).toEqual(['off', 'off', 'off']);
    await runFor(t, 1);
    expect((await powerStates(client))['sp-1']).toBe('booting');
    await runFor(t, 2);
    expect((await powerStates(client))['sp-1']).toBe('on');
    expect(Object.values(await powerStates(client)).slice(1)).toEqual(['off', 'off']);

    // Prepared at the lead time: out of the freepool, closed to the tenant.
    await runFor(t, 2);
    expect((await poolOf('sp-1')).name).toBe('freepool');
    await runFor(t, 1);
    expect(await poolOf('sp-1')).toEqual({
      name: reservationId,
      metadata: { 'climate:prepared': 'true' },
    });
    const filter = await t.http
      .post('/v1/scheduler/filter')
      .send({ project_id: 'admin', hosts: ['sp-1'], hints: { reservation: reservationId } })
      .expect(200);
    expect(filter.body.hosts).toEqual([]);

    // At the start only access opens.
    await runFor(t, 10);
    const shown = (await t.http.get(`/v1/leases/${created.body.lease.id}`).expect(200)).body.lease;
    expect(shown.status).toBe('ACTIVE');
    expect((await poolOf('sp-1')).metadata).toMatchObject({ 'blazar:owner': 'admin' });
    expect(await startsOnHostsNotOn(client)).toEqual([]);
    expect(await activeOnHostsNotOn(client)).toEqual([]);

    // Off again once the lease (and its idle time since the boot) is over.
    await runFor(t, 61);
    expect(await powerStates(client)).toEqual({ 'sp-1': 'off', 'sp-2': 'off', 'sp-3': 'off' });
    expect((await powerLog(client))['sp-1'].map((e) => e.state)).toEqual([
      'stopping',
      'off',
      'booting',
      'on',
      'stopping',
      'off',
    ]);
  });
});
