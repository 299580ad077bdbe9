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

  function lease(name: string, start: Date, end: Date, set = 'sparse') {
    return t.http.post('/v1/leases').send({
      name,
      start_date: wire(start),
      end_date: wire(end),
      reservations: [hostReservation({ resource_properties: `["==", "$set", "${set}"]` })],
    });
  }

  const inMinutes = (m: number) => new Date(t.clock.now().getTime() + m * MINUTE);

  async function hostsOf(leaseId: string): Promise<string[]> {
    const { rows } = await client.query(
      `SELECT h.hypervisor_hostname AS name FROM host_allocations a
         JOIN reservations r ON r.id = a.reservation_id JOIN hosts h ON h.id = a.host_id
        WHERE r.lease_id = $1 ORDER BY 1`,
      [leaseId],
    );
    return rows.map((r) => r.name as string);
  }

  async function poolOf(host: string): Promise<{ name: string; metadata: Record<string, string> }> {
    const pools = (await t.http.get('/v1/pools').expect(200)).body.pools as {
      name: string;
      kind: string;
      hosts: string[];
      metadata: Record<string, string>;
    }[];
    const pool = pools.find((p) => p.hosts.includes(host) && p.kind !== 'topology');
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

  it('should give a lease inside the boot window a host that is on, or a 409 naming when an off host could make it', async () => {
    t.clock.set(new Date('2031-02-01T00:00:00Z'));
    await addHosts(t.http, ['bw-1', 'bw-2'], () => ({ set: 'window' }));
    await runFor(t, 61);
    expect((await powerStates(client))['bw-1']).toBe('off');

    // Off hosts need 5 minutes of boot and 10 of lead: a start in 5 minutes is refused.
    const refused = await lease('too-soon', inMinutes(5), inMinutes(65), 'window').expect(409);
    expect(refused.body).toEqual({
      error_code: 409,
      error_name: 409,
      error_type: 'NotEnoughHostsAvailable',
      error_message: `Not enough hosts available; the earliest start with 1 free matching host(s) is ${wire(inMinutes(15))}`,
    });
    const availability = await t.http
      .get(
        '/v1/os-hosts/availability?count=2&duration=1h&resource_properties=["==", "$set", "window"]',
      )
      .expect(200);
    expect(availability.body.availability[0]).toMatchObject({
      start_date: `${inMinutes(15).toISOString().slice(0, 16)}:00.000000`,
      free_hosts: 2,
    });

    // A host marked always on comes back on and takes the lease at once.
    const [, id2] = (await t.http.get('/v1/os-hosts').expect(200)).body.hosts
      .filter((h: { set?: string }) => h.set === 'window')
      .map((h: { id: string }) => h.id);
    await t.http.put(`/v1/os-hosts/${id2}/power`).send({ always_on: true }).expect(200);
    await runFor(t, 3);
    expect(await powerStates(client)).toMatchObject({ 'bw-1': 'off', 'bw-2': 'on' });
    const taken = await lease('on-host', inMinutes(5), inMinutes(65), 'window').expect(201);
    expect(await hostsOf(taken.body.lease.id)).toEqual(['bw-2']);

    // The start made by the off host: it is powered on at once and ready in time.
    const later = await lease('off-host', inMinutes(15), inMinutes(75), 'window').expect(201);
    expect(await hostsOf(later.body.lease.id)).toEqual(['bw-1']);
    await step(t);
    expect((await powerStates(client))['bw-1']).toBe('booting');
    await runFor(t, 16);
    const shown = (await t.http.get(`/v1/leases/${later.body.lease.id}`).expect(200)).body.lease;
    expect(shown.status).toBe('ACTIVE');
    expect(await startsOnHostsNotOn(client)).toEqual([]);
  });

  it('should put a prepared host back in the freepool when its lease moves later', async () => {
    t.clock.set(new Date('2031-04-01T00:00:00Z'));
    await addHosts(t.http, ['mv-1'], () => ({ set: 'moved' }));
    const created = await lease('moved', inMinutes(8), inMinutes(60), 'moved').expect(201);
    await step(t);
    expect((await poolOf('mv-1')).name).toBe(created.body.lease.reservations[0].id);
    await t.http
      .put(`/v1/leases/${created.body.lease.id}`)
      .send({ start_date: wire(inMinutes(600)), end_date: wire(inMinutes(660)) })
      .expect(200);
    await step(t);
    expect((await poolOf('mv-1')).name).toBe('freepool');
    await t.http.delete(`/v1/leases/${created.body.lease.id}`).expect(204);
  });
});

describe('the power plan with hosts that boot later than planned', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The plan counts 5 minutes of boot; the (builtin) hosts take 25.
    t = await startApp({
      databaseUrl: db.url,
      env: {
        PLUGINS: 'physical:host',
        POWER_PLAN: 'on',
        POWER_OFF_IDLE_MINUTES: '60',
        POWER_BOOT_SECONDS: '300',
        BUILTIN_BOOT_SECONDS: '1500',
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

  const inMinutes = (m: number) => new Date(t.clock.now().getTime() + m * MINUTE);

  it('should hold a start until a host that boots late is on', async () => {
    t.clock.set(new Date('2031-03-01T00:00:00Z'));
    await addHosts(t.http, ['late-1'], () => ({ set: 'late' }));
    await runFor(t, 61);
    expect((await powerStates(client))['late-1']).toBe('off');
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'late',
        start_date: inMinutes(60).toISOString(),
        end_date: inMinutes(120).toISOString(),
        reservations: [hostReservation()],
      })
      .expect(201);
    await runFor(t, 60);
    expect((await powerStates(client))['late-1']).toBe('booting');
    const pending = (await t.http.get(`/v1/leases/${created.body.lease.id}`).expect(200)).body
      .lease;
    expect(pending.status).toBe('PENDING');
    expect(
      pending.events.find((e: { event_type: string }) => e.event_type === 'start_lease'),
    ).toMatchObject({
      status: 'UNDONE',
    });
    await runFor(t, 11);
    expect((await powerStates(client))['late-1']).toBe('on');
    const active = (await t.http.get(`/v1/leases/${created.body.lease.id}`).expect(200)).body.lease;
    expect(active.status).toBe('ACTIVE');
    expect(await startsOnHostsNotOn(client)).toEqual([]);
  });
});
