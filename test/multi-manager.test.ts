import type { Client } from 'pg';
import { FakeClock } from '../src/common/clock.js';
import { EventsRepository } from '../src/events/events.repository.js';
import type { Lease } from '../src/model/lease.entity.js';
import type { Reservation } from '../src/model/reservation.entity.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { RecorderPlugin } from './support/recorder-plugin.js';
import {
  createLease,
  createLeases,
  eventOf,
  reservationStatus,
  sleep,
  waitFor,
} from './support/seed.js';

jest.setTimeout(60_000);

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const LEASES = 120; // 360 events: start, before-end and end of each
// Claims must outlive every clock move of this file: a live claim is never expired here.
const TTL_MS = String(24 * HOUR);

/**
 * A recorder that can block on_start of chosen reservations (recorder.hold() would block
 * every on_start), slow down actions, and notices two actions of one lease running at once.
 */
class TracingPlugin extends RecorderPlugin {
  readonly blockedStarts = new Map<string, Promise<void>>();
  readonly delays = new Map<string, number>();
  readonly overlaps: string[] = [];
  jitterMs = 0;
  private readonly inFlight = new Map<string, number>();

  block(reservationId: string): () => void {
    let release!: () => void;
    this.blockedStarts.set(reservationId, new Promise<void>((r) => (release = r)));
    return () => {
      this.blockedStarts.delete(reservationId);
      release();
    };
  }

  override onStart(r: Reservation, l: Lease): Promise<void> {
    return this.traced(r, async () => {
      await this.blockedStarts.get(r.id);
      await super.onStart(r, l);
    });
  }
  override beforeEnd(r: Reservation, l: Lease): Promise<void> {
    return this.traced(r, () => super.beforeEnd(r, l));
  }
  override onEnd(r: Reservation, l: Lease): Promise<void> {
    return this.traced(r, () => super.onEnd(r, l));
  }

  private async traced(r: Reservation, action: () => Promise<void>): Promise<void> {
    const running = (this.inFlight.get(r.leaseId) ?? 0) + 1;
    this.inFlight.set(r.leaseId, running);
    if (running > 1) this.overlaps.push(r.leaseId);
    try {
      const delay = (this.delays.get(r.id) ?? 0) + Math.random() * this.jitterMs;
      if (delay > 0) await sleep(delay);
      await action();
    } finally {
      this.inFlight.set(r.leaseId, (this.inFlight.get(r.leaseId) ?? 1) - 1);
    }
  }
}

describe('several managers on one database', () => {
  let db: TestDatabase;
  let client: Client;
  const clock = new FakeClock(new Date('2031-01-01T00:00:00Z'));
  const recorder = new TracingPlugin();
  const managers: TestApp[] = [];
  /** Event ids each manager's claims returned, by manager. */
  const claims: string[][] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    for (let i = 0; i < 3; i++) {
      const t = await startApp({
        databaseUrl: db.url,
        clock,
        recorder,
        env: { EVENT_CONCURRENCY: '8', EVENT_CLAIM_TTL_MS: TTL_MS },
      });
      // Record what each manager's claim returned, to prove no event is claimed twice.
      const events = t.app.get(EventsRepository);
      const claimDue = events.claimDue.bind(events);
      claims.push([]);
      events.claimDue = async (...args) => {
        const claimed = await claimDue(...args);
        claims[i].push(...claimed.map((e) => e.id));
        return claimed;
      };
      managers.push(t);
    }
  });
  // Leaves nothing due behind for the next test: every lease created so far runs to its end.
  afterEach(async () => {
    clock.advance(24 * HOUR);
    await managers[0].settle();
  });
  afterAll(async () => {
    for (const m of managers) await m.close();
    await client?.end();
    await db?.drop();
  });

  let queue: Promise<unknown> = Promise.resolve();
  /** Events of these leases that a manager could claim now, or that are running. */
  async function pending(leaseIds: string[]): Promise<number> {
    // One client: the polling loops take turns on it.
    const query = queue.then(() =>
      client.query(
        `SELECT count(*)::int AS n FROM events
          WHERE lease_id = ANY($1)
            AND (status = 'IN_PROGRESS'
                 OR (status = 'UNDONE' AND time <= $2 AND (retry_at IS NULL OR retry_at <= $2)))`,
        [leaseIds, clock.now()],
      ),
    );
    queue = query.catch(() => undefined);
    return (await query).rows[0].n;
  }

  /**
   * Every manager polls in its own loop, all at once, without waiting for the others,
   * until none of the leases has anything due or running. Returns what each claimed.
   */
  async function runConcurrently(apps: TestApp[], leaseIds: string[]): Promise<number[]> {
    const claimed = apps.map(() => 0);
    const deadline = Date.now() + 45_000;
    let finished = false;
    await Promise.all(
      apps.map(async (t, i) => {
        while (!finished) {
          if (Date.now() > deadline) throw new Error('managers did not finish in 45 s');
          const n = await t.manager.tick();
          claimed[i] += n;
          if (n > 0) continue;
          // Nothing claimable now: let running work progress, then see if anything is left.
          await Promise.race([t.manager.drain(), sleep(2)]);
          if ((await pending(leaseIds)) === 0) finished = true;
        }
      }),
    );
    await Promise.all(apps.map((t) => t.manager.drain()));
    return claimed;
  }

  const position = (action: string, leaseId: string) =>
    recorder.calls.findIndex((c) => c.action === action && c.leaseId === leaseId);

  it('should run each of hundreds of due events exactly once when three managers poll at once', async () => {
    clock.set(new Date('2031-01-01T00:00:00Z'));
    const leases = await createLeases(managers, LEASES, (i) => ({
      name: `many-${i}`,
      start: 'now',
      end: '2031-01-01 00:30',
    }));
    const ids = leases.map((l) => l.id);
    // start, before-end (clamped to the start) and end are all due
    clock.advance(HOUR);
    expect(await pending(ids)).toBe(LEASES * 3);
    recorder.jitterMs = 10;
    claims.forEach((c) => (c.length = 0));

    const claimed = await runConcurrently(managers, ids);
    recorder.jitterMs = 0;

    expect(claimed.reduce((a, b) => a + b, 0)).toBe(LEASES * 3);
    // The work was really spread over the managers.
    expect(claimed.filter((n) => n > 0).length).toBeGreaterThan(1);
    // No event id came back from two claims, on one manager or on two.
    const all = claims.flat();
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(LEASES * 3);

    const events = await client.query(
      `SELECT status, attempts, claimed_by, last_error, count(*)::int AS n FROM events
        WHERE lease_id = ANY($1) GROUP BY 1, 2, 3, 4`,
      [ids],
    );
    expect(events.rows).toEqual([
      { status: 'DONE', attempts: 1, claimed_by: null, last_error: null, n: LEASES * 3 },
    ]);
    const statuses = await client.query(
      `SELECT status, count(*)::int AS n FROM leases WHERE id = ANY($1) GROUP BY 1`,
      [ids],
    );
    expect(statuses.rows).toEqual([{ status: 'TERMINATED', n: LEASES }]);

    for (const { id, reservationId } of leases) {
      expect(recorder.count('on_start', reservationId)).toBe(1);
      expect(recorder.count('before_end', reservationId)).toBe(1);
      expect(recorder.count('on_end', reservationId)).toBe(1);
      // One at a time, in order: start -> before_end -> end.
      const calls = recorder.calls.filter((c) => c.leaseId === id).map((c) => c.action);
      expect(calls).toEqual(['reserve', 'on_start', 'before_end', 'on_end', 'release']);
    }
    // Never two actions of one lease at the same time, whichever managers ran them.
    expect(recorder.overlaps).toEqual([]);
  });

  it('should end the earlier lease before starting the next when both are due in one poll', async () => {
    clock.set(new Date('2031-02-01T00:00:00Z'));
    const m = managers[0];
    const first = await createLease(m, { name: 'first', start: 'now', end: '2031-02-01 01:00' });
    const second = await createLease(m, {
      name: 'second',
      start: '2031-02-01 01:00',
      end: '2031-02-01 02:00',
    });
    await m.settle(); // first starts (and its before-end, clamped to its start, runs)
    expect((await eventOf(client, first.id, 'before_end_lease')).status).toBe('DONE');
    expect((await eventOf(client, second.id, 'start_lease')).status).toBe('UNDONE');

    clock.set(new Date('2031-02-01T01:00:00Z'));
    // A slow end: were the start not waiting for it, it would be recorded first.
    recorder.delays.set(first.reservationId, 200);
    try {
      expect(await m.manager.tick()).toBe(2); // first's end and second's start, one batch
      await m.manager.drain();
    } finally {
      recorder.delays.delete(first.reservationId);
    }

    const ended = position('on_end', first.id);
    const released = position('release', first.id);
    const started = position('on_start', second.id);
    expect(ended).toBeGreaterThanOrEqual(0);
    expect(started).toBeGreaterThan(ended);
    // The whole end (the allocation freed too) came before the start.
    expect(started).toBeGreaterThan(released);
    expect((await eventOf(client, first.id, 'end_lease')).status).toBe('DONE');
    expect((await eventOf(client, second.id, 'start_lease')).status).toBe('DONE');
  });

  it('should start another lease on the same manager while one lease start hangs', async () => {
    clock.set(new Date('2031-03-01T00:00:00Z'));
    const m = managers[0];
    const slow = await createLease(m, { name: 'slow', start: 'now', end: '2031-03-01 00:30' });
    const release = recorder.block(slow.reservationId);
    try {
      expect(await m.manager.tick()).toBe(1);
      await waitFor('the slow start to be running', async () =>
        (await eventOf(client, slow.id, 'start_lease')).status === 'IN_PROGRESS' ? true : undefined,
      );

      // The slow lease's before-end and end fall due, earlier than the next lease's start.
      clock.set(new Date('2031-03-01T01:00:00Z'));
      const fast = await createLease(m, { name: 'fast', start: 'now', end: '2031-03-01 02:00' });
      let fastClaimed = 0;
      await waitFor('the other lease to start', async () => {
        fastClaimed += await m.manager.tick();
        const lease = (await m.http.get(`/v1/leases/${fast.id}`).expect(200)).body.lease;
        return lease.status === 'ACTIVE' ? true : undefined;
      });
      expect(fastClaimed).toBeGreaterThanOrEqual(1);
      expect(recorder.count('on_start', fast.reservationId)).toBe(1);

      // The slow lease is untouched meanwhile: its start runs once, its other events wait.
      expect((await m.http.get(`/v1/leases/${slow.id}`).expect(200)).body.lease.status).toBe(
        'STARTING',
      );
      expect(await eventOf(client, slow.id, 'start_lease')).toMatchObject({
        status: 'IN_PROGRESS',
        attempts: 1,
        claimed_by: m.manager.owner,
      });
      expect((await eventOf(client, slow.id, 'before_end_lease')).status).toBe('UNDONE');
      expect((await eventOf(client, slow.id, 'end_lease')).status).toBe('UNDONE');
    } finally {
      release();
    }
    await m.manager.drain();
    await m.settle();
    expect(await reservationStatus(client, slow.reservationId)).toBe('deleted');
    expect((await m.http.get(`/v1/leases/${slow.id}`).expect(200)).body.lease.status).toBe(
      'TERMINATED',
    );
    expect(position('on_start', slow.id)).toBeLessThan(position('before_end', slow.id));
    expect(position('before_end', slow.id)).toBeLessThan(position('on_end', slow.id));
    expect(recorder.count('on_start', slow.reservationId)).toBe(1);
    expect(recorder.overlaps).toEqual([]);
  });

  it('should use a free slot for a due lease when the earliest due events belong to leases whose actions still run', async () => {
    // Three slots; two are taken by hung starts whose later events are due first.
    const small = await startApp({
      databaseUrl: db.url,
      clock,
      recorder,
      env: { EVENT_CONCURRENCY: '3', EVENT_CLAIM_TTL_MS: TTL_MS },
    });
    const releases: (() => void)[] = [];
    try {
      clock.set(new Date('2031-04-01T00:00:00Z'));
      const hung = await createLeases([small], 2, (i) => ({
        name: `hung-${i}`,
        start: 'now',
        end: '2031-04-01 00:30',
      }));
      for (const h of hung) releases.push(recorder.block(h.reservationId));
      expect(await small.manager.tick()).toBe(2);

      clock.set(new Date('2031-04-01T01:00:00Z'));
      const waiting = await createLease(small, {
        name: 'waiting',
        start: 'now',
        end: '2031-04-01 02:00',
      });
      let claimed = 0;
      for (let i = 0; i < 5 && claimed === 0; i++) claimed += await small.manager.tick();
      expect(claimed).toBe(1);
      await waitFor('the waiting lease to start', async () =>
        (await eventOf(client, waiting.id, 'start_lease')).status === 'DONE' ? true : undefined,
      );
    } finally {
      releases.forEach((r) => r());
      await small.manager.drain();
      await small.settle();
      await small.close();
    }
  });
});
