import type { Client } from 'pg';
import type { Lease } from '../src/model/lease.entity.js';
import type { Reservation } from '../src/model/reservation.entity.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { RecorderPlugin } from './support/recorder-plugin.js';
import { createLease, eventOf, leaseRow, sleep, waitFor } from './support/seed.js';

jest.setTimeout(30_000);

/**
 * A plugin whose first on_start hangs until the test lets it go, long past the plugin
 * timeout; it logs when each call begins and when it settles.
 */
class HangingPlugin extends RecorderPlugin {
  readonly log: string[] = [];
  private started = 0;
  private unblock: (() => void) | null = null;
  private readonly gate = new Promise<void>((resolve) => (this.unblock = resolve));

  letGo(): void {
    this.unblock?.();
  }

  override async onStart(r: Reservation, l: Lease): Promise<void> {
    const n = ++this.started;
    this.log.push(`begin ${n}`);
    try {
      if (n === 1) await this.gate;
      await super.onStart(r, l);
    } finally {
      this.log.push(`settled ${n}`);
    }
  }
}

describe('an action that outlives PLUGIN_TIMEOUT_MS', () => {
  let db: TestDatabase;
  let client: Client;
  let t: TestApp;
  const plugin = new HangingPlugin();

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    t = await startApp({
      databaseUrl: db.url,
      recorder: plugin,
      // Retries are due 10 ms (fake time) after a failure; the claim lives 3 s and is
      // renewed every second while the action runs.
      env: { PLUGIN_TIMEOUT_MS: '200', EVENT_POLL_MS: '10', EVENT_CLAIM_TTL_MS: '3000' },
    });
  });
  afterAll(async () => {
    plugin.letGo();
    await t?.manager.drain();
    await t?.close();
    await client?.end();
    await db?.drop();
  });

  it('should start the retry only after the timed-out attempt has settled', async () => {
    const lease = await createLease(t, { name: 'slow', start: 'now', end: '2030-01-02 00:00' });
    expect(await t.manager.tick()).toBe(1);
    await waitFor('the first attempt to begin', () =>
      plugin.log.includes('begin 1') ? true : undefined,
    );

    // Well past the plugin timeout (real time), with the retry delay passed (fake time).
    await sleep(1_200);
    t.clock.advance(1_000);
    expect(await t.manager.tick()).toBe(0);
    expect(plugin.log).toEqual(['begin 1']);
    // The event stays claimed by the manager whose action still runs.
    expect(await eventOf(client, lease.id, 'start_lease')).toMatchObject({
      status: 'IN_PROGRESS',
      claimed_by: t.manager.owner,
      attempts: 1,
    });
    expect((await leaseRow(client, lease.id)).status).toBe('STARTING');

    // The hung call ends at last; only now is the attempt recorded as failed.
    plugin.letGo();
    const failed = await waitFor('the failure to be recorded', async () => {
      const event = await eventOf(client, lease.id, 'start_lease');
      return event.status === 'UNDONE' ? event : undefined;
    });
    expect(failed.last_error).toContain('timed out after 200 ms');
    expect(failed.attempts).toBe(1);
    expect((await leaseRow(client, lease.id)).status).toBe('PENDING');

    t.clock.advance(1_000);
    await t.settle();
    expect(plugin.log).toEqual(['begin 1', 'settled 1', 'begin 2', 'settled 2']);
    expect(await eventOf(client, lease.id, 'start_lease')).toMatchObject({
      status: 'DONE',
      attempts: 2,
    });
    expect((await leaseRow(client, lease.id)).status).toBe('ACTIVE');
  });
});
