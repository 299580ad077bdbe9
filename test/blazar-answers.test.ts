import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';

const as = (project: string, roles = 'member') => ({
  'X-Project-Id': project,
  'X-User-Id': `${project}-u`,
  'X-Roles': roles,
});
const A = as('proj-a');

type Event = { event_type: string; time: string | null; status: string | null };
const times = (lease: { events: Event[] }) =>
  Object.fromEntries(lease.events.map((e) => [e.event_type, [e.time, e.status]]));

/** Blazar's answers where Climate used to differ (issue 25, item 4). */
describe('Blazar answers', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });
  beforeEach(() => t.clock.set(new Date('2037-01-01T00:00:00Z')));

  async function count(table: string): Promise<number> {
    const client = await connect(db.url);
    try {
      return Number((await client.query(`SELECT count(*) FROM ${table}`)).rows[0].count);
    } finally {
      await client.end();
    }
  }

  const create = (body: Record<string, unknown>) =>
    t.http
      .post('/v1/leases')
      .set(A)
      .send({ name: 'l', start_date: '2037-01-01 01:00', end_date: '2037-01-01 05:00', ...body });

  describe('PUT end_date now', () => {
    it('should end a started lease now: end date, end event and before-end event move, and the manager ends it', async () => {
      const lease = (
        await create({ reservations: [{ resource_type: 'test:recorder' }] }).expect(201)
      ).body.lease;
      t.clock.set(new Date('2037-01-01T02:10:30Z'));
      await t.settle();
      const res = await t.http
        .put(`/v1/leases/${lease.id}`)
        .set(A)
        .send({ end_date: 'now' })
        .expect(200);
      // this instant: Blazar takes the minute
      expect(res.body.lease.end_date).toBe('2037-01-01T02:10:30.000000');
      expect(times(res.body.lease)).toEqual({
        start_lease: ['2037-01-01T01:00:00.000000', 'DONE'],
        // kept its distance from the end (an hour), as Blazar does; it runs first
        before_end_lease: ['2037-01-01T01:10:30.000000', 'UNDONE'],
        end_lease: ['2037-01-01T02:10:30.000000', 'UNDONE'],
      });
      await t.settle();
      const ended = (await t.http.get(`/v1/leases/${lease.id}`).set(A).expect(200)).body.lease;
      expect(ended.status).toBe('TERMINATED');
      const reservation = lease.reservations[0].id as string;
      expect(t.recorder.count('before_end', reservation)).toBe(1);
      expect(t.recorder.count('on_end', reservation)).toBe(1);
    });

    it('should end a lease that started earlier in the same minute', async () => {
      t.clock.set(new Date('2037-01-01T03:00:10Z'));
      const lease = (await create({ start_date: 'now' }).expect(201)).body.lease;
      await t.settle();
      t.clock.set(new Date('2037-01-01T03:00:40Z'));
      const res = await t.http.put(`/v1/leases/${lease.id}`).set(A).send({ end_date: 'now' });
      expect(res.status).toBe(200);
      expect(res.body.lease.end_date).toBe('2037-01-01T03:00:40.000000');
      await t.settle();
      expect((await t.http.get(`/v1/leases/${lease.id}`).set(A)).body.lease.status).toBe(
        'TERMINATED',
      );
    });

    it("should refuse to end a lease that has not started, with Blazar's 400, and change nothing", async () => {
      const lease = (await create({}).expect(201)).body.lease;
      const res = await t.http
        .put(`/v1/leases/${lease.id}`)
        .set(A)
        .send({ end_date: 'now' })
        .expect(400);
      expect(res.body.error_message).toBe('End date must be later than current and start date');
      const after = (await t.http.get(`/v1/leases/${lease.id}`).set(A)).body.lease;
      expect(after).toEqual(lease);
    });
  });

  describe('user-defined events', () => {
    it('should store and show user-defined events and never run them', async () => {
      const res = await create({
        events: [
          { event_type: 'notification', event_date: '2037-01-01 02:00' },
          // the blazar CLI's --event without a date; Blazar stores it with no time
          { event_type: 'reminder', event_date: '' },
          // a lookalike of the lease's own events, with a status that would run it
          { event_type: 'end_lease', time: '2037-01-01 01:30', status: 'UNDONE', colour: 'x' },
        ],
        reservations: [{ resource_type: 'test:recorder' }],
      }).expect(201);
      const lease = res.body.lease;
      const user = lease.events.slice(3);
      expect(user).toEqual([
        expect.objectContaining({
          event_type: 'notification',
          time: '2037-01-01T02:00:00.000000',
          status: null,
          lease_id: lease.id,
        }),
        expect.objectContaining({ event_type: 'reminder', time: null, status: null }),
        expect.objectContaining({
          event_type: 'end_lease',
          time: '2037-01-01T01:30:00.000000',
          status: 'UNDONE',
        }),
      ]);
      expect(user[2]).not.toHaveProperty('colour');
      expect(new Set(user.map((e: { id: string }) => e.id)).size).toBe(3);
      // the events table has the lease's three only: nothing the manager could claim
      const client = await connect(db.url);
      const stored = await client.query(`SELECT event_type FROM events WHERE lease_id = $1`, [
        lease.id,
      ]);
      await client.end();
      expect(stored.rows.map((r) => r.event_type).sort()).toEqual([
        'before_end_lease',
        'end_lease',
        'start_lease',
      ]);
      t.clock.set(new Date('2037-01-01T01:45:00Z'));
      await t.settle();
      const shown = (await t.http.get(`/v1/leases/${lease.id}`).set(A).expect(200)).body.lease;
      // started, not ended by the lookalike; the user events as they were
      expect(shown.status).toBe('ACTIVE');
      expect(t.recorder.count('on_end', lease.reservations[0].id)).toBe(0);
      expect(shown.events.slice(3)).toEqual(user);
      const listed = (await t.http.get('/v1/leases').set(A).expect(200)).body.leases;
      expect(listed.find((l: { id: string }) => l.id === lease.id).events).toEqual(shown.events);
    });

    it('should accept "events": [] in a create and an update, and replace user events in an update', async () => {
      const lease = (await create({ events: [], name: 'plain' }).expect(201)).body.lease;
      expect(lease.events.length).toBe(3);
      const moved = await t.http
        .put(`/v1/leases/${lease.id}`)
        .set(A)
        .send({ end_date: '2037-01-01 06:00', events: [] })
        .expect(200);
      expect(moved.body.lease.events.length).toBe(3);
      expect(moved.body.lease.end_date).toBe('2037-01-01T06:00:00.000000');
      const added = await t.http
        .put(`/v1/leases/${lease.id}`)
        .set(A)
        .send({ events: [{ event_type: 'mine', event_date: '2037-01-01 03:00' }] })
        .expect(200);
      expect(added.body.lease.events.slice(3)).toEqual([
        expect.objectContaining({ event_type: 'mine', time: '2037-01-01T03:00:00.000000' }),
      ]);
      // absent: kept
      const renamed = await t.http
        .put(`/v1/leases/${lease.id}`)
        .set(A)
        .send({ name: 'renamed' })
        .expect(200);
      expect(renamed.body.lease.events.slice(3)).toEqual(added.body.lease.events.slice(3));
      const cleared = await t.http
        .put(`/v1/leases/${lease.id}`)
        .set(A)
        .send({ events: [] })
        .expect(200);
      expect(cleared.body.lease.events.length).toBe(3);
    });

    it('should refuse malformed events with 400 and write nothing', async () => {
      const before = await count('leases');
      for (const events of [
        'lots',
        [1],
        [{ event_type: 5 }],
        [{ event_type: 'x', event_date: 'tomorrow' }],
        Array.from({ length: 51 }, () => ({ event_type: 'x' })),
      ]) {
        const res = await create({ events }).expect(400);
        expect(res.body.error_code).toBe(400);
      }
      expect(await count('leases')).toBe(before);
    });
  });

  describe('list query strings', () => {
    it('should ignore unknown query keys, as Blazar does, and still refuse a known key with a bad value', async () => {
      const mine = (await create({ name: 'listed' }).expect(201)).body.lease.id;
      const res = await t.http
        .get('/v1/leases?colour=red&detail=true&status=PENDING')
        .set(A)
        .expect(200);
      expect(res.body.leases.map((l: { id: string }) => l.id)).toContain(mine);
      for (const bad of ['?colour=red&limit=0', '?status=HAPPY&x=1', '?sort=colour&y']) {
        const refused = await t.http.get(`/v1/leases${bad}`).set(A).expect(400);
        expect(refused.body.error_code).toBe(400);
      }
      // bodies keep refusing unknown keys
      await create({ colour: 'red' }).expect(400);
    });
  });

  describe('error body', () => {
    it("should carry Blazar's numeric error_name, with error_code, error_message and the symbolic error_type", async () => {
      const missing = await create({ end_date: undefined }).expect(400);
      expect(missing.body).toEqual({
        error_code: 400,
        error_message: 'Missing parameter end_date',
        error_name: 400,
        error_type: 'MissingParameter',
      });
      const absent = '00000000-0000-4000-8000-000000000000';
      const notFound = await t.http.get(`/v1/leases/${absent}`).set(A).expect(404);
      expect(notFound.body).toEqual({
        error_code: 404,
        error_message: `Object with {'lease_id': '${absent}'} not found`,
        error_name: 404,
        error_type: 'NotFound',
      });
      const denied = await t.http.get('/v1/os-hosts').set(A).expect(403);
      expect(denied.body).toMatchObject({ error_code: 403, error_name: 403 });
      // the scheduler filter's early refusal writes the same body
      const filter = await t.http.post('/v1/scheduler/filter').set(A).send({}).expect(403);
      expect(filter.body).toMatchObject({
        error_code: 403,
        error_name: 403,
        error_type: 'PolicyNotAuthorized',
      });
    });
  });
});

describe('PUT end_date now on a host reservation', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, driver, env: { PLUGINS: 'physical:host' } });
    t.clock.set(new Date('2037-03-01T00:00:00Z'));
    await addHosts(t.http, ['now-1']);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const reserve = (name: string) =>
    t.http
      .post('/v1/leases')
      .set(A)
      .send({
        name,
        start_date: 'now',
        end_date: '2037-03-02 00:00',
        reservations: [hostReservation()],
      });

  it('should give the host back at once, to the freepool and to the next lease', async () => {
    const lease = (await reserve('held').expect(201)).body.lease;
    await t.settle();
    expect(driver.poolOf('now-1')).toEqual([lease.reservations[0].id]);
    // the host is taken for the whole day
    await reserve('waiting').expect(409);
    t.clock.set(new Date('2037-03-01T01:30:15Z'));
    await t.http.put(`/v1/leases/${lease.id}`).set(A).send({ end_date: 'now' }).expect(200);
    await t.settle();
    const ended = (await t.http.get(`/v1/leases/${lease.id}`).set(A)).body.lease;
    expect(ended).toMatchObject({ status: 'TERMINATED', end_date: '2037-03-01T01:30:15.000000' });
    expect(driver.poolOf('now-1')).toEqual(['freepool']);
    const next = (await reserve('next').expect(201)).body.lease;
    await t.settle();
    expect(driver.poolOf('now-1')).toEqual([next.reservations[0].id]);
  });
});
