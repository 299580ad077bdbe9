import type { Client } from 'pg';
import { WebhookDispatcher } from '../src/notifications/webhook-dispatcher.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { createLeases } from './support/seed.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

jest.setTimeout(90_000);

/**
 * A 2xx that the manager fails to record (its database connection timed out, as a manager
 * starved of CPU sees on its own delay) must not be sent again while the claim is its own.
 */
describe('webhooks: a delivery whose record fails', () => {
  const receiver = new WebhookReceiver();
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let dispatcher: WebhookDispatcher;

  beforeAll(async () => {
    await receiver.listen();
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        WEBHOOK_URLS: receiver.url,
        WEBHOOK_SECRET: 'record-retry-secret-0123456789',
        WEBHOOK_TIMEOUT_SECONDS: '2',
      },
    });
    client = await connect(db.url);
    dispatcher = t.app.get(WebhookDispatcher);
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await receiver.down();
    await db?.drop();
  });

  async function outboxSize(): Promise<number> {
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM notification_outbox`);
    return rows[0].n as number;
  }

  it('should record it again instead of sending it twice', async () => {
    // The first two records are refused by the database (a sequence: not rolled back).
    await client.query(`
      CREATE SEQUENCE record_attempts;
      CREATE FUNCTION refuse_first_records() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('record_attempts') <= 2 THEN
          RAISE EXCEPTION 'refused for the test';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_first_records BEFORE INSERT ON webhook_deliveries
        FOR EACH ROW EXECUTE FUNCTION refuse_first_records();`);
    const [lease] = await createLeases([t], 1, () => ({
      name: 'record-retry',
      start: '2030-06-01 00:00',
      end: '2030-06-01 01:00',
    }));

    // Whatever the pass says, then passes until the outbox is empty.
    await dispatcher.pump().catch(() => 0);
    for (let i = 0; i < 10 && (await outboxSize()) > 0; i++) {
      t.clock.advance(61_000);
      await dispatcher.pump().catch(() => 0);
    }

    const { rows } = await client.query(`SELECT last_value::int AS n FROM record_attempts`);
    // Refused twice, then recorded: the third try.
    expect(rows[0].n).toBe(3);
    expect(await outboxSize()).toBe(0);
    expect(receiver.got.map((d) => [d.message.event_type, d.message.payload.id])).toEqual([
      ['lease.create', lease.id],
    ]);
  });
});
