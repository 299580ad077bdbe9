import { FakeClock } from '../src/common/clock.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { RecorderPlugin } from './support/recorder-plugin.js';
import type { Lease } from '../src/model/lease.entity.js';
import type { Reservation } from '../src/model/reservation.entity.js';

const HOUR = 3600_000;
jest.setTimeout(30_000);
const LEASES = 120; // 360 events: start, before-end and end of each

/** Blocks on_start of chosen reservations until released. */
class BlockingPlugin extends RecorderPlugin {
  readonly blocked = new Map<string, Promise<void>>();
  override async onStart(r: Reservation, l: Lease): Promise<void> {
    await this.blocked.get(r.id);
    return super.onStart(r, l);
  }
}

describe('several managers on one database', () => {
  let db: TestDatabase;
  const clock = new FakeClock(new Date('2036-01-01T00:00:00Z'));
  const recorder = new BlockingPlugin();
  let managers: TestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 3; i++) {
      managers.push(
        await startApp({ databaseUrl: db.url, clock, recorder, env: { EVENT_CONCURRENCY: '8' } }),
      );
    }
  });
  afterAll(async () => {
    for (const m of managers) await m.close();
    managers = [];
    await db?.drop();
  });

  async function createLeases(
    count: number,
    prefix: string,
    start: string,
    end: string,
  ): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await managers[i % 3].http
        .post('/v1/leases')
        .send({
          name: `${prefix}-${i}`,
          start_date: start,
          end_date: end,
          reservations: [{ resource_type: 'test:recorder' }],
        })
        .expect(201);
      ids.push(res.body.lease.id);
    }
    return ids;
  }

  /** All three poll at once until none of them finds anything due. */
  async function runAll(): Promise<number[]> {
    const claimed = [0, 0, 0];
    for (let round = 0; round < 200; round++) {
      const counts = await Promise.all(
        managers.map(async (m, i) => {
          const n = await m.manager.tick();
          claimed[i] += n;
          return n;
        }),
      );
      await Promise.all(managers.map((m) => m.manager.drain()));
      if (counts.every((n) => n === 0)) return claimed;
    }
    throw new Error('managers did not settle');
  }

  it('should run every one of hundreds of due events exactly once, in order per lease', async () => {
    clock.set(new Date('2036-01-01T00:00:00Z'));
    const ids = await createLeases(LEASES, 'many', '2036-01-01 01:00', '2036-01-01 03:00');
    clock.advance(4 * HOUR); // start, before-end and end are all due
    const claimed = await runAll();

    expect(claimed.reduce((a, b) => a + b, 0)).toBe(LEASES * 3);
    expect(claimed.filter((n) => n > 0).length).toBeGreaterThan(1);
    const client = await connect(db.url);
    try {
      const events = await client.query(
        `SELECT status, attempts, count(*)::int AS n FROM events WHERE lease_id = ANY($1) GROUP BY 1, 2`,
        [ids],
      );
      expect(events.rows).toEqual([{ status: 'DONE', attempts: 1, n: LEASES * 3 }]);
      const leases = await client.query(
        `SELECT status, count(*)::int AS n FROM leases WHERE id = ANY($1) GROUP BY 1`,
        [ids],
      );
      expect(leases.rows).toEqual([{ status: 'TERMINATED', n: LEASES }]);
    } finally {
      await client.end();
    }
    for (const leaseId of ids) {
      const calls = recorder.calls.filter((c) => c.leaseId === leaseId).map((c) => c.action);
      expect(calls).toEqual(['reserve', 'on_start', 'before_end', 'on_end', 'release']);
    }
  });

  it('should end the earlier lease before starting the next one when both are due in one poll', async () => {
    clock.set(new Date('2036-02-01T00:00:00Z'));
    const [first] = await createLeases(1, 'first', '2036-02-01 01:00', '2036-02-01 02:00');
    clock.set(new Date('2036-02-01T01:30:00Z'));
    await runAll();
    const [second] = await createLeases(1, 'second', '2036-02-01 02:00', '2036-02-01 03:00');
    clock.set(new Date('2036-02-01T02:00:00Z'));
    // one manager sees the end of the first and the start of the second in one claim
    await managers[0].manager.tick();
    await managers[0].manager.drain();
    const ended = recorder.calls.findIndex((c) => c.leaseId === first && c.action === 'on_end');
    const started = recorder.calls.findIndex(
      (c) => c.leaseId === second && c.action === 'on_start',
    );
    expect(ended).toBeGreaterThanOrEqual(0);
    expect(started).toBeGreaterThan(ended);
  });

  it('should keep other leases moving when one lease start hangs', async () => {
    clock.set(new Date('2036-03-01T00:00:00Z'));
    const [slow, fast] = await createLeases(2, 'hang', '2036-03-01 01:00', '2036-03-02 00:00');
    const slowReservation = (await managers[0].http.get(`/v1/leases/${slow}`)).body.lease
      .reservations[0].id;
    let release!: () => void;
    recorder.blocked.set(slowReservation, new Promise<void>((r) => (release = r)));
    clock.advance(2 * HOUR);
    const m = managers[0].manager;
    await m.tick(); // claims both; the slow one blocks
    for (
      let i = 0;
      i < 50 && (await managers[0].http.get(`/v1/leases/${fast}`)).body.lease.status !== 'ACTIVE';
      i++
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await managers[0].http.get(`/v1/leases/${fast}`)).body.lease.status).toBe('ACTIVE');
    expect((await managers[0].http.get(`/v1/leases/${slow}`)).body.lease.status).toBe('STARTING');
    // a start in progress cannot be deleted
    await managers[1].http.delete(`/v1/leases/${slow}`).expect(409);
    release();
    await m.drain();
    expect((await managers[0].http.get(`/v1/leases/${slow}`)).body.lease.status).toBe('ACTIVE');
  });
});
