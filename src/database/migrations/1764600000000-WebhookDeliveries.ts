import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each sink of the outbox tracks its own delivery, so the write side stays one INSERT per
 * change: `published` is the bus's mark (set instead of deleting the row while webhooks
 * still need it), `webhook_deliveries` holds one row per notification a receiver has
 * taken, and `webhook_receivers` one row per receiver URL with its claim (one manager
 * sends to a receiver at a time, which keeps the order) and its retry state.
 */
export class WebhookDeliveries1764600000000 implements MigrationInterface {
  name = 'WebhookDeliveries1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE notification_outbox ADD COLUMN published boolean NOT NULL DEFAULT false`,
    );
    // The bus claims unpublished rows in order; published ones may wait for a receiver.
    await q.query(
      `CREATE INDEX notification_outbox_unpublished ON notification_outbox (id) WHERE NOT published`,
    );
    await q.query(`
      CREATE TABLE webhook_deliveries (
        outbox_id bigint NOT NULL,
        receiver text NOT NULL,
        delivered_at timestamptz NOT NULL,
        PRIMARY KEY (outbox_id, receiver)
      )`);
    await q.query(`
      CREATE TABLE webhook_receivers (
        url text PRIMARY KEY,
        failures integer NOT NULL DEFAULT 0,
        retry_at timestamptz,
        last_error text,
        last_delivered_at timestamptz,
        claimed_by text,
        claim_expires_at timestamptz
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_receivers`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP INDEX notification_outbox_unpublished`);
    await q.query(`ALTER TABLE notification_outbox DROP COLUMN published`);
  }
}
