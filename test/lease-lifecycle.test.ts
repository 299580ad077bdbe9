import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const HOUR = 3600_000;

describe('lease lifecycle on a fake clock', () => {
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

  async function show(id: string) {
    const res = await t.http.get(`/v1/leases/${id}`).expect(200);
    return res.body.lease;
  }

  const events = (lease: { events: { event_type: string; status: string }[] }) =>
    Object.fromEntries(lease.events.map((e) => [e.event_type, e.status]));

  it('should go PENDING -> ACTIVE -> TERMINATED with its events DONE when time passes', async () => {
    t.clock.set(new Date('2030-01-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'life',
        start_date: '2030-01-01 01:00',
        end_date: '2030-01-01 03:00',
        reservations: [{ resource_type: 'test:recorder', size: 2 }],
      })
      .expect(201);
    const id = created.body.lease.id;
    const reservationId = created.body.lease.reservations[0].id;
    expect(created.body.lease.status).toBe('PENDING');

    await t.settle();
    expect((await show(id)).status).toBe('PENDING');

    t.clock.advance(HOUR);
    await t.settle();
    let lease = await show(id);
    expect(lease.status).toBe('ACTIVE');
    expect(lease.reservations[0].status).toBe('active');
    expect(events(lease)).toEqual({
      start_lease: 'DONE',
      before_end_lease: 'UNDONE',
      end_lease: 'UNDONE',
    });
    expect(t.recorder.count('on_start', reservationId)).toBe(1);

    t.clock.advance(HOUR);
    await t.settle();
    expect(events(await show(id)).before_end_lease).toBe('DONE');
    expect(t.recorder.count('before_end', reservationId)).toBe(1);

    t.clock.advance(HOUR);
    await t.settle();
    lease = await show(id);
    expect(lease.status).toBe('TERMINATED');
    expect(lease.reservations[0].status).toBe('deleted');
    expect(events(lease)).toEqual({
      start_lease: 'DONE',
      before_end_lease: 'DONE',
      end_lease: 'DONE',
    });
    expect(t.recorder.count('on_end', reservationId)).toBe(1);
    expect(t.recorder.count('release', reservationId)).toBe(1);
  });

  it('should run a lease with no reservations through its whole life when all events are due at once', async () => {
    t.clock.set(new Date('2030-02-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({ name: 'empty', start_date: 'now', end_date: '2030-02-01 02:00' })
      .expect(201);
    t.clock.advance(5 * HOUR);
    await t.settle();
    const lease = await show(created.body.lease.id);
    expect(lease.status).toBe('TERMINATED');
    expect(events(lease)).toEqual({
      start_lease: 'DONE',
      before_end_lease: 'DONE',
      end_lease: 'DONE',
    });
  });

  it('should retry a failed start with backoff and then succeed when the failure passes', async () => {
    t.clock.set(new Date('2030-03-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'flaky',
        start_date: 'now',
        end_date: '2030-03-02 00:00',
        reservations: [{ resource_type: 'test:recorder' }],
      })
      .expect(201);
    const id = created.body.lease.id;
    t.recorder.failNext('on_start', 2);

    await t.settle();
    let lease = await show(id);
    expect(lease.status).toBe('PENDING');
    expect(events(lease).start_lease).toBe('UNDONE');

    // The retry waits for its backoff: nothing runs before it.
    await t.settle();
    expect(events(await show(id)).start_lease).toBe('UNDONE');

    t.clock.advance(60_000);
    await t.settle();
    t.clock.advance(60_000);
    await t.settle();
    lease = await show(id);
    expect(lease.status).toBe('ACTIVE');
    expect(events(lease).start_lease).toBe('DONE');
  });

  it('should put the event and the lease in ERROR with the reason when every attempt fails', async () => {
    t.clock.set(new Date('2030-04-01T00:00:00Z'));
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: 'broken',
        start_date: 'now',
        end_date: '2030-04-02 00:00',
        reservations: [{ resource_type: 'test:recorder' }],
      })
      .expect(201);
    const id = created.body.lease.id;
    t.recorder.failNext('on_start', t.config.eventMaxAttempts);
    for (let i = 0; i < t.config.eventMaxAttempts; i++) {
      await t.settle();
      t.clock.advance(10 * 60_000);
    }
    const lease = await show(id);
    expect(lease.status).toBe('ERROR');
    expect(events(lease).start_lease).toBe('ERROR');
    expect(lease.reservations[0].status).toBe('error');
    const client = await connect(db.url);
    const { rows } = await client.query(
      `SELECT attempts, last_error FROM events WHERE lease_id = $1 AND event_type = 'start_lease'`,
      [id],
    );
    await client.end();
    expect(rows[0].attempts).toBe(t.config.eventMaxAttempts);
    expect(rows[0].last_error).toContain('injected on_start failure');
  });
});
