import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, names } from './support/hosts.js';

const env = {
  PLUGINS: 'physical:host,test:recorder',
  MAX_LEASE_DURATION_SECONDS: '86400',
  MAX_LEASE_DURATION_EXEMPT_PROJECTS: 'exempt',
  PROJECT_MAX_HOSTS: '3',
  PROJECT_MAX_HOST_HOURS: '200',
  PROJECT_HOST_HOURS_PERIOD_DAYS: '7',
};

/** Maximum lease duration (Blazar's filter) and the per-project limits. */
describe('usage limits', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function count(table: string, project: string): Promise<number> {
    const client = await connect(db.url);
    try {
      const join = table === 'leases' ? '' : 'JOIN leases l ON l.id = x.lease_id';
      const where = table === 'leases' ? 'x.project_id = $1' : 'l.project_id = $1';
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM ${table} x ${join} WHERE ${where}`,
        [project],
      );
      return rows[0].n as number;
    } finally {
      await client.end();
    }
  }

  function create(project: string, start: string, end: string, reservations: unknown[] = []) {
    return t.http
      .post('/v1/leases')
      .set('X-Project-Id', project)
      .set('X-Roles', 'member')
      .send({ name: 'l', start_date: start, end_date: end, reservations });
  }

  it("should refuse a lease longer than the maximum with 400 and Blazar's message when the project is not exempt", async () => {
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    const res = await create('dur-p', '2031-01-02 00:00', '2031-01-03 00:01').expect(400);
    expect(res.body).toEqual({
      error_code: 400,
      error_name: 400,
      error_type: 'MaxLeaseDurationException',
      error_message:
        'Lease duration of 86460 seconds must be less than or equal to the maximum lease ' +
        'duration of 86400 seconds.',
    });
    expect(await count('leases', 'dur-p')).toBe(0);
    await create('dur-p', '2031-01-02 00:00', '2031-01-03 00:00').expect(201);
  });

  it('should accept a lease longer than the maximum when its project is exempt', async () => {
    await create('exempt', '2031-01-02 00:00', '2031-01-12 00:00').expect(201);
  });

  it('should refuse an update beyond the maximum, measured from the start even when active, and change nothing', async () => {
    t.clock.set(new Date('2031-02-01T00:00:00Z'));
    const lease = (await create('dur-u', 'now', '2031-02-01 12:00').expect(201)).body.lease;
    await t.settle();
    t.clock.set(new Date('2031-02-01T10:00:00Z'));
    // 10 hours in: 20 more hours is 30 from the start, though only 20 from now
    const refused = await t.http
      .put(`/v1/leases/${lease.id}`)
      .set('X-Project-Id', 'dur-u')
      .send({ end_date: '2031-02-02 06:00' })
      .expect(400);
    expect(refused.body.error_type).toBe('MaxLeaseDurationException');
    expect(refused.body.error_message).toContain('Lease duration of 108000 seconds');
    const after = (await t.http.get(`/v1/leases/${lease.id}`).expect(200)).body.lease;
    expect(after).toMatchObject({ end_date: lease.end_date, status: 'ACTIVE' });
    await t.http
      .put(`/v1/leases/${lease.id}`)
      .set('X-Project-Id', 'dur-u')
      .send({ end_date: '2031-02-02 00:00' })
      .expect(200);
  });

  it('should accept an update beyond the maximum when the project is exempt', async () => {
    t.clock.set(new Date('2031-03-01T00:00:00Z'));
    const lease = (await create('exempt', '2031-03-02 00:00', '2031-03-02 12:00').expect(201)).body
      .lease;
    await t.http
      .put(`/v1/leases/${lease.id}`)
      .set('X-Project-Id', 'exempt')
      .send({ end_date: '2031-03-20 00:00' })
      .expect(200);
  });

  it('should let at most PROJECT_MAX_HOSTS hosts be held at once when 32 creates race', async () => {
    t.clock.set(new Date('2031-04-01T00:00:00Z'));
    await addHosts(t.http, names('race', 40));
    const results = await Promise.all(
      Array.from({ length: 32 }, () =>
        create('racer', '2031-04-02 00:00', '2031-04-02 02:00', [hostReservation()]),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 403)).toHaveLength(29);
    const refused = results.find((r) => r.status === 403);
    expect(refused?.body).toEqual({
      error_code: 403,
      error_name: 403,
      error_type: 'ProjectLimitExceeded',
      error_message:
        'Project racer may hold at most 3 host(s) at once (PROJECT_MAX_HOSTS); at ' +
        '2031-04-02 00:00 it already holds 3 and this lease would add 1',
    });
    expect(await count('leases', 'racer')).toBe(3);
    // Another project is not counted against this one.
    await create('other', '2031-04-02 00:00', '2031-04-02 02:00', [hostReservation()]).expect(201);
    // A later, non-overlapping window is free again.
    await create('racer', '2031-04-03 00:00', '2031-04-03 02:00', [hostReservation()]).expect(201);
  });

  it('should refuse an update that would hold more hosts than the limit, changing nothing', async () => {
    t.clock.set(new Date('2031-05-01T00:00:00Z'));
    const lease = (
      await create('grow', '2031-05-02 00:00', '2031-05-02 02:00', [
        hostReservation({ min: 2, max: 2 }),
      ]).expect(201)
    ).body.lease;
    const res = await t.http
      .put(`/v1/leases/${lease.id}`)
      .set('X-Project-Id', 'grow')
      .send({ reservations: [{ id: lease.reservations[0].id, min: 4, max: 4 }] })
      .expect(403);
    expect(res.body.error_message).toContain('already holds 0 and this lease would add 4');
    const after = (await t.http.get(`/v1/leases/${lease.id}`).expect(200)).body.lease;
    expect(after.reservations[0]).toMatchObject({ min: 2, max: 2 });
  });

  it('should refuse a lease past PROJECT_MAX_HOST_HOURS in a period, saying the use so far', async () => {
    t.clock.set(new Date('2031-06-01T00:00:00Z'));
    // 2031-06-02 is a Monday: one 7-day period, 3 hosts x 24 h x 2 = 144 host-hours
    await create('hours', '2031-06-02 00:00', '2031-06-03 00:00', [
      hostReservation({ min: 3, max: 3 }),
    ]).expect(201);
    await create('hours', '2031-06-04 00:00', '2031-06-05 00:00', [
      hostReservation({ min: 3, max: 3 }),
    ]).expect(201);
    const res = await create('hours', '2031-06-06 00:00', '2031-06-07 00:00', [
      hostReservation({ min: 3, max: 3 }),
    ]).expect(403);
    expect(res.body.error_message).toBe(
      'Project hours may reserve at most 200 host-hours per 7-day period ' +
        '(PROJECT_MAX_HOST_HOURS); in the period 2031-06-02 00:00 to 2031-06-09 00:00 it ' +
        'already holds 144 and this lease would add 72',
    );
    // The next period has room.
    await create('hours', '2031-06-09 00:00', '2031-06-10 00:00', [
      hostReservation({ min: 3, max: 3 }),
    ]).expect(201);
  });
});
