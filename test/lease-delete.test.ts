import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { Maintenance } from '../src/events/maintenance.service.js';

const MINUTE = 60_000;

/** A delete that did not finish (a failure, or the process died) is finished later. */
describe('lease deletes that do not finish at once', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { EVENT_CLAIM_TTL_MS: '60000' } });
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function activeLease(name: string): Promise<{ id: string; reservationId: string }> {
    const created = await t.http
      .post('/v1/leases')
      .send({
        name,
        start_date: 'now',
        end_date: '2031-12-01 00:00',
        reservations: [{ resource_type: 'test:recorder', size: 1 }],
      })
      .expect(201);
    await t.settle();
    return { id: created.body.lease.id, reservationId: created.body.lease.reservations[0].id };
  }

  async function statusOf(id: string): Promise<string | null> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(`SELECT status FROM leases WHERE id = $1`, [id]);
      return rows[0]?.status ?? null;
    } finally {
      await client.end();
    }
  }

  it('should keep a lease DELETING when its end fails, and finish the delete later', async () => {
    const { id, reservationId } = await activeLease('flaky-end');
    t.recorder.failNext('on_end');
    const res = await t.http.delete(`/v1/leases/${id}`);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(res.body.error_code).toBe(res.status);
    // not ERROR: nothing was lost, the delete is not finished yet
    expect(await statusOf(id)).toBe('DELETING');
    await t.http.get(`/v1/leases/${id}`).expect(200);
    // a maintenance run before the claim time leaves it to the request that began it
    await t.app.get(Maintenance).run();
    expect(await statusOf(id)).toBe('DELETING');
    t.clock.advance(2 * MINUTE);
    await t.app.get(Maintenance).run();
    expect(await statusOf(id)).toBeNull();
    expect(t.recorder.count('on_end', reservationId)).toBe(1); // the call that went through
    expect(t.recorder.count('release', reservationId)).toBe(1);
  });

  it('should finish a delete whose process died after marking the lease DELETING', async () => {
    const { id, reservationId } = await activeLease('orphan');
    // what a crash right after the first transaction leaves behind
    const client = await connect(db.url);
    await client.query(`UPDATE leases SET status = 'DELETING', updated_at = $2 WHERE id = $1`, [
      id,
      t.clock.now(),
    ]);
    await client.end();
    t.clock.advance(2 * MINUTE);
    await t.app.get(Maintenance).run();
    expect(await statusOf(id)).toBeNull();
    expect(t.recorder.count('on_end', reservationId)).toBe(1);
    expect(t.recorder.count('release', reservationId)).toBe(1);
  });
});
