import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Notifications waiting for the broker, written in the transaction of the change they
 * describe; the manager publishes them and deletes the row once the broker confirms.
 */
export class NotificationOutbox1764400000000 implements MigrationInterface {
  name = 'NotificationOutbox1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE notification_outbox (
        id bigserial PRIMARY KEY,
        message_id uuid NOT NULL UNIQUE,
        event_type text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE notification_outbox`);
  }
}
