import { DataSource } from 'typeorm';
import { FakeClock } from '../src/common/clock.js';
import type { Lease } from '../src/leases/entities/lease.entity.js';
import type { Reservation } from '../src/reservations/entities/reservation.entity.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp } from './support/app.js';
import { RecorderPlugin } from './support/recorder-plugin.js';

jest.setTimeout(30_000);

/** Blocks on_start of chosen reservations until released; `once` blocks the first call only. */
class BlockingPlugin extends RecorderPlugin {
  readonly blocked = new Map<string, Promise<void>>();
  once = false;
  override async onStart(r: Reservation, l: Lease): Promise<void> {
    const gate = this.blocked.get(r.id);
    if (this.once) this.blocked.delete(r.id);
    await gate;
    return super.onStart(r, l);
  }
}

describe('a manager that dies mid-event', () => {
  let db: TestDatabase;
  const local = new FakeClock(new Date('2036-04-01T00:00:00Z'));

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('should let another manager finish an event whose manager died, once the claim expires', async () => {
    const hang = new BlockingPlugin('test:hang');
    let release!: () => void;
    const env = { PLUGINS: 'test:hang', EVENT_CLAIM_TTL_MS: '60000' };
    const dying = await startApp({ databaseUrl: db.url, clock: local, recorder: hang, env });
    const survivor = await startApp({ databaseUrl: db.url, clock: local, recorder: hang, env });
    release = () => undefined;
    try {
      const res = await survivor.http
        .post('/v1/leases')
        .send({
          name: 'orphan',
          start_date: 'now',
          end_date: '2036-04-02 00:00',
          reservations: [{ resource_type: 'test:hang' }],
        })
        .expect(201);
      const leaseId = res.body.lease.id as string;
      hang.blocked.set(res.body.lease.reservations[0].id, new Promise<void>((r) => (release = r)));

      expect(await dying.manager.tick()).toBe(1);
      const client = await connect(db.url);
      const startEvent = async () =>
        (
          await client.query(
            `SELECT status, claimed_by, attempts FROM events WHERE lease_id = $1 AND event_type = 'start_lease'`,
            [leaseId],
          )
        ).rows[0];
      expect(await startEvent()).toMatchObject({
        status: 'IN_PROGRESS',
        claimed_by: dying.manager.owner,
      });

      // The dying manager loses its database: no heartbeat, no completion. A hard kill.
      await dying.app.get(DataSource).destroy();

      // While the claim is live, the survivor leaves the event alone.
      local.advance(30_000);
      expect(await survivor.manager.tick()).toBe(0);
      // Once it expires, the survivor takes it over and finishes it.
      local.advance(31_000);
      release();
      expect(await survivor.manager.tick()).toBe(1);
      await survivor.manager.drain();
      expect(await startEvent()).toEqual({ status: 'DONE', claimed_by: null, attempts: 2 });
      expect((await survivor.http.get(`/v1/leases/${leaseId}`)).body.lease.status).toBe('ACTIVE');
      await client.end();
    } finally {
      release();
      await survivor.close();
      await dying.app.close().catch(() => undefined);
    }
  });

  it('should keep the outcome of the manager that took over when the stale one finishes late', async () => {
    local.set(new Date('2036-04-01T01:00:00Z'));
    const plugin = new BlockingPlugin('test:late');
    plugin.once = true;
    const env = { PLUGINS: 'test:late', EVENT_CLAIM_TTL_MS: '60000' };
    const slow = await startApp({ databaseUrl: db.url, clock: local, recorder: plugin, env });
    const other = await startApp({ databaseUrl: db.url, clock: local, recorder: plugin, env });
    let release = () => undefined as void;
    try {
      const res = await other.http
        .post('/v1/leases')
        .send({
          name: 'late',
          start_date: 'now',
          end_date: '2036-04-01 12:00',
          reservations: [{ resource_type: 'test:late' }],
        })
        .expect(201);
      const leaseId = res.body.lease.id as string;
      plugin.blocked.set(
        res.body.lease.reservations[0].id,
        new Promise<void>((r) => (release = r)),
      );
      expect(await slow.manager.tick()).toBe(1);
      for (let i = 0; i < 100; i++) {
        const lease = (await other.http.get(`/v1/leases/${leaseId}`)).body.lease;
        if (lease.status === 'STARTING') break;
        await new Promise((r) => setTimeout(r, 10));
      }
      // the slow manager stalls past its claim (its heartbeat runs on real time, far away)
      local.advance(61_000);
      expect(await other.manager.tick()).toBe(1);
      await other.manager.drain();
      release();
      await slow.manager.drain();

      const client = await connect(db.url);
      const { rows } = await client.query(
        `SELECT status, claimed_by, attempts, last_error FROM events WHERE lease_id = $1 AND event_type = 'start_lease'`,
        [leaseId],
      );
      await client.end();
      expect(rows[0]).toEqual({ status: 'DONE', claimed_by: null, attempts: 2, last_error: null });
      expect((await other.http.get(`/v1/leases/${leaseId}`)).body.lease.status).toBe('ACTIVE');
      // the action ran twice (plugins are idempotent), the outcome was recorded once
      expect(plugin.count('on_start')).toBe(2);
    } finally {
      release();
      await slow.close();
      await other.close();
    }
  });
});
