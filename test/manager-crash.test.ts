import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { FakeClock } from '../src/common/clock.js';
import type { Lease } from '../src/model/lease.entity.js';
import type { Reservation } from '../src/model/reservation.entity.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { RecorderPlugin } from './support/recorder-plugin.js';
import {
  createLease,
  CreatedLease,
  eventOf,
  leaseRow,
  reservationStatus,
  sleep,
  waitFor,
} from './support/seed.js';

jest.setTimeout(30_000);

const HOUR = 3_600_000;

interface Stuck {
  /** The stuck call carries on and succeeds. */
  release(): void;
  /** The stuck call carries on and fails. */
  fail(): void;
}

/**
 * A plugin double whose on_start gets stuck on its first call for a chosen reservation
 * (a manager that hangs or dies mid-action); later calls go straight through.
 */
class StuckPlugin extends RecorderPlugin {
  /** Reservation ids of every on_start call begun, finished or not. */
  readonly entered: string[] = [];
  private readonly stuck = new Map<string, Promise<void>>();
  private readonly unstick: (() => void)[] = [];

  stickFirst(reservationId: string): Stuck {
    let settle!: (ok: boolean) => void;
    const gate = new Promise<void>((resolve, reject) => {
      settle = (ok) => (ok ? resolve() : reject(new Error('stale manager action failed late')));
    });
    gate.catch(() => undefined);
    this.stuck.set(reservationId, gate);
    this.unstick.push(() => settle(true));
    return { release: () => settle(true), fail: () => settle(false) };
  }

  releaseAll(): void {
    this.unstick.forEach((u) => u());
  }

  override async onStart(r: Reservation, l: Lease): Promise<void> {
    this.entered.push(r.id);
    const gate = this.stuck.get(r.id);
    this.stuck.delete(r.id);
    await gate;
    await super.onStart(r, l);
  }
}

interface Pair {
  db: TestDatabase;
  client: Client;
  clock: FakeClock;
  plugin: StuckPlugin;
  /** The manager that gets stuck, dies or stalls. */
  a: TestApp;
  /** The manager that should (or should not) take over. */
  b: TestApp;
  lease: CreatedLease;
  stuck: Stuck;
}

describe('a manager that dies or stalls mid-event', () => {
  let pair: Pair | undefined;

  /**
   * Two managers on a fresh database of their own, sharing one fake clock and one plugin,
   * and a lease due to start whose first on_start gets stuck. Manager A has claimed it.
   */
  async function setUp(ttlMs: string): Promise<Pair> {
    const db = await createTestDatabase();
    const client = await connect(db.url);
    const clock = new FakeClock(new Date('2032-01-01T00:00:00Z'));
    const plugin = new StuckPlugin();
    const env = { EVENT_CLAIM_TTL_MS: ttlMs };
    const a = await startApp({ databaseUrl: db.url, clock, recorder: plugin, env });
    const b = await startApp({ databaseUrl: db.url, clock, recorder: plugin, env });
    const lease = await createLease(b, { name: 'orphan', start: 'now', end: '2032-01-01 02:00' });
    const stuck = plugin.stickFirst(lease.reservationId);
    pair = { db, client, clock, plugin, a, b, lease, stuck };

    expect(await a.manager.tick()).toBe(1);
    await waitFor('manager A to be inside on_start', () =>
      plugin.entered.includes(lease.reservationId) ? true : undefined,
    );
    expect(await eventOf(client, lease.id, 'start_lease')).toMatchObject({
      status: 'IN_PROGRESS',
      claimed_by: a.manager.owner,
      attempts: 1,
    });
    expect((await leaseRow(client, lease.id)).status).toBe('STARTING');
    return pair;
  }

  afterEach(async () => {
    if (pair === undefined) return;
    const { a, b, db, client, plugin } = pair;
    pair = undefined;
    plugin.releaseAll();
    await Promise.race([a.manager.drain(), sleep(5_000)]);
    // A killed app's database is gone already; closing it again may throw.
    await a.close().catch(() => undefined);
    await b.close();
    await client.end();
    await db.drop();
  });

  it('should let another manager finish the event when its manager is killed mid-action and the claim expires', async () => {
    const { a, b, client, clock, plugin, lease } = await setUp('2000');

    // A hard kill. app.close() is a graceful stop: it waits up to 10 s for the running
    // action and A's heartbeat keeps renewing the claim meanwhile, which is right for a
    // shutdown but is not a crash. Destroying A's connection pool instead leaves A's
    // action hanging with no way to renew its claim or record an outcome, as if the
    // process had died (A's heartbeats now fail, in the log only).
    await a.app.get(DataSource).destroy();
    const expiry = (await eventOf(client, lease.id, 'start_lease')).claim_expires_at as Date;
    // Two heartbeat periods (TTL / 3 of real time): A cannot renew any more.
    await sleep(1_500);
    expect((await eventOf(client, lease.id, 'start_lease')).claim_expires_at).toEqual(expiry);

    // Up to its expiry the claim stands, even for a dead manager.
    clock.set(expiry);
    expect(await b.manager.tick()).toBe(0);
    clock.set(new Date(expiry.getTime() + 1));
    expect(await b.manager.tick()).toBe(1);
    await b.manager.drain();

    expect(await eventOf(client, lease.id, 'start_lease')).toMatchObject({
      status: 'DONE',
      claimed_by: null,
      claim_expires_at: null,
      attempts: 2,
      last_error: null,
    });
    expect((await leaseRow(client, lease.id)).status).toBe('ACTIVE');
    expect(await reservationStatus(client, lease.reservationId)).toBe('active');
    // B ran the action again (plugin actions are idempotent); A's never finished.
    expect(plugin.entered.filter((id) => id === lease.reservationId)).toHaveLength(2);
    expect(plugin.count('on_start', lease.reservationId)).toBe(1);
  });

  it('should never take over a live claim when its heartbeat keeps renewing it past the first expiry', async () => {
    const { a, b, client, clock, plugin, lease, stuck } = await setUp('2000');
    const start = () => eventOf(client, lease.id, 'start_lease');
    const firstExpiry = (await start()).claim_expires_at as Date;

    let expiry = firstExpiry;
    for (let round = 0; round < 4; round++) {
      // Less than the TTL since the last renewal: the claim is live whatever A does now.
      clock.advance(1_500);
      expect(await b.manager.tick()).toBe(0);
      // A's heartbeat (every TTL / 3 of real time) pushes the expiry to now + TTL.
      const previous = expiry;
      expiry = await waitFor('a heartbeat', async () => {
        const at = (await start()).claim_expires_at as Date;
        return at > previous ? at : undefined;
      });
      expect(expiry.getTime()).toBeGreaterThanOrEqual(clock.now().getTime() + 2_000);
      expect(await b.manager.tick()).toBe(0);
    }
    // The clock is well past the expiry A's claim first had; the claim is still A's.
    expect(clock.now().getTime()).toBeGreaterThan(firstExpiry.getTime() + 2_000);
    expect(await start()).toMatchObject({
      status: 'IN_PROGRESS',
      claimed_by: a.manager.owner,
      attempts: 1,
    });
    expect(plugin.entered).toEqual([lease.reservationId]);

    stuck.release();
    await a.manager.drain();
    expect(await start()).toMatchObject({ status: 'DONE', claimed_by: null, attempts: 1 });
    expect((await leaseRow(client, lease.id)).status).toBe('ACTIVE');
    expect(plugin.count('on_start', lease.reservationId)).toBe(1);
  });

  // Manager A stalls: its claim expires on the shared clock before its first heartbeat,
  // due TTL / 3 = 10 s of real time after the claim, long after these takeovers.
  const STALL_TTL = '30000';

  async function takeOver(p: Pair): Promise<void> {
    p.clock.advance(30_001);
    expect(await p.b.manager.tick()).toBe(1);
    await p.b.manager.drain();
    expect(await eventOf(p.client, p.lease.id, 'start_lease')).toMatchObject({
      status: 'DONE',
      claimed_by: null,
      attempts: 2,
    });
    expect((await leaseRow(p.client, p.lease.id)).status).toBe('ACTIVE');
  }

  async function snapshot(p: Pair) {
    const { rows: events } = await p.client.query(
      `SELECT * FROM events WHERE lease_id = $1 ORDER BY event_type`,
      [p.lease.id],
    );
    const { rows: reservations } = await p.client.query(
      `SELECT * FROM reservations WHERE lease_id = $1`,
      [p.lease.id],
    );
    return { lease: await leaseRow(p.client, p.lease.id), events, reservations };
  }

  it('should keep the outcome of the manager that took over when the stalled one finishes late', async () => {
    const p = await setUp(STALL_TTL);
    await takeOver(p);
    const before = await snapshot(p);

    p.stuck.release();
    await p.a.manager.drain();

    // A's compare-and-set failed: no second DONE, nothing of A's written over B's outcome.
    expect(await snapshot(p)).toEqual(before);
    expect(before.lease.status).toBe('ACTIVE');
    expect(await eventOf(p.client, p.lease.id, 'start_lease')).toMatchObject({
      status: 'DONE',
      attempts: 2,
      last_error: null,
      retry_at: null,
    });
    // Both ran the action (idempotent); the outcome was recorded once.
    expect(p.plugin.count('on_start', p.lease.reservationId)).toBe(2);
  });

  it('should keep the outcome of the manager that took over when the stalled one fails late', async () => {
    const p = await setUp(STALL_TTL);
    await takeOver(p);
    const before = await snapshot(p);

    p.stuck.fail();
    await p.a.manager.drain();

    // No retry scheduled, no error recorded, the lease not put back to PENDING.
    expect(await snapshot(p)).toEqual(before);
    expect(await eventOf(p.client, p.lease.id, 'start_lease')).toMatchObject({
      status: 'DONE',
      last_error: null,
      retry_at: null,
    });
    expect(before.lease.status).toBe('ACTIVE');
  });

  it('should leave an ended lease ended when a stalled start finishes after the lease ran to its end', async () => {
    const p = await setUp(STALL_TTL);
    await takeOver(p);
    // B runs the rest of the lease: before-end and end.
    p.clock.advance(3 * HOUR);
    await p.b.settle();
    const before = await snapshot(p);
    expect(before.lease.status).toBe('TERMINATED');
    expect(before.reservations.map((r) => r.status)).toEqual(['deleted']);
    expect(before.events.map((e) => e.status)).toEqual(['DONE', 'DONE', 'DONE']);

    p.stuck.release();
    await p.a.manager.drain();

    // The stale start must not bring the ended reservation back.
    expect(await reservationStatus(p.client, p.lease.reservationId)).toBe('deleted');
    expect(await snapshot(p)).toEqual(before);
  });
});
