/**
 * Dates and durations far in the future (an end of 8800-01-01 or 9999-12-31, a duration
 * of 99999999d) get a 400 or 409 in Blazar's error body, never a 500, on a create, an
 * update, the availability search and the capacity plan; and nothing is written.
 */
import type { Response } from 'supertest';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';

const env = { PLUGINS: 'physical:host,virtual:instance', CLEANING_TIME_MINUTES: '30' };
const FAR = ['8800-01-01 00:00', '9999-12-31 00:00', '9999-12-31T23:59:59Z'];

function expectRefused(res: Response): void {
  expect([400, 409]).toContain(res.status);
  expect(res.body).toEqual({
    error_code: res.status,
    error_name: res.status,
    error_message: expect.any(String),
    error_type: expect.any(String),
  });
}

describe('far-future dates and durations', () => {
  let db: TestDatabase;
  let t: TestApp;
  let blocker: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env });
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await addHosts(t.http, ['far-1'], () => ({ zone: 'far' }));
    // The only host, taken for ever: every other window asks for it.
    const res = await t.http
      .post('/v1/leases')
      .send({
        name: 'blocker',
        start_date: '2031-01-02 00:00',
        end_date: '2200-01-01 00:00',
        reservations: [hostReservation()],
      })
      .expect(201);
    blocker = res.body.lease.id;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function leaseCount(): Promise<number> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query('SELECT count(*)::int AS n FROM leases');
      return rows[0].n as number;
    } finally {
      await client.end();
    }
  }

  it.each(FAR)('should refuse a host lease ending %s with no room', async (end) => {
    const before = await leaseCount();
    const res = await t.http.post('/v1/leases').send({
      name: `far-${end}`,
      start_date: '2031-01-05 00:00',
      end_date: end,
      reservations: [hostReservation()],
    });
    expectRefused(res);
    expect(await leaseCount()).toBe(before);
  });

  it.each(FAR)('should refuse an instance lease ending %s with no room', async (end) => {
    const before = await leaseCount();
    const res = await t.http.post('/v1/leases').send({
      name: `far-slots-${end}`,
      start_date: '2031-01-05 00:00',
      end_date: end,
      reservations: [slotReservation('far', { amount: 10 })],
    });
    expectRefused(res);
    expect(await leaseCount()).toBe(before);
  });

  it.each(FAR)('should refuse an update to an end of %s with no room', async (end) => {
    // On the only host, before the blocker: a longer end runs into it.
    const created = await t.http
      .post('/v1/leases')
      .send({
        name: `short-${end}`,
        start_date: '2031-01-01 01:00',
        end_date: '2031-01-01 02:00',
        reservations: [hostReservation()],
      })
      .expect(201);
    const id = created.body.lease.id as string;
    const res = await t.http.put(`/v1/leases/${id}`).send({ end_date: end });
    expectRefused(res);
    const after = await t.http.get(`/v1/leases/${id}`).expect(200);
    expect(after.body.lease.end_date).toBe('2031-01-01T02:00:00.000000');
    await t.http.delete(`/v1/leases/${id}`).expect(204);

    // With room, a far end is taken as any other.
    const grow = await t.http.put(`/v1/leases/${blocker}`).send({ end_date: end });
    expect(grow.status).toBe(200);
    expect(grow.body.lease.end_date).toMatch(/^(8800-01-01|9999-12-31)T/);
    await t.http.put(`/v1/leases/${blocker}`).send({ end_date: '2200-01-01 00:00' }).expect(200);
  });

  it.each([
    'duration=99999999d',
    'duration=9999999w',
    'duration=900000000000000s',
    'duration=1d&start=9999-12-31 00:00',
    'duration=3650000d&start=2031-01-01 00:00',
  ])('should refuse an availability search with %s', async (query) => {
    const res = await t.http.get(`/v1/os-hosts/availability?count=1&${query}`);
    expectRefused(res);
  });

  it('should find the start of a window of 6,845 years, longer than the time before it', async () => {
    // Its spans begin before 4713 BC: the search must not compute them.
    const res = await t.http
      .get('/v1/os-hosts/availability?count=1&duration=2500000d&start=2031-01-01 00:00&limit=1')
      .expect(200);
    expect(res.body.availability).toEqual([
      expect.objectContaining({ start_date: '2200-01-01T00:30:00.000000', free_hosts: 1 }),
    ]);
  });

  it('should refuse a capacity plan running to the end of time', async () => {
    const res = await t.http.get(
      '/v1/os-hosts/capacity?start=9999-12-30 00:00&end=9999-12-31 23:59&step=1d',
    );
    expect(res.status).not.toBe(500);
  });
});
