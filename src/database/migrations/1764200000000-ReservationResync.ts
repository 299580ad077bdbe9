import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A started reservation whose resources must be brought in line after an update: the
 * update records when, in its own transaction, and the manager does the work.
 */
export class ReservationResync1764200000000 implements MigrationInterface {
  name = 'ReservationResync1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE reservations ADD COLUMN resync_at timestamptz`);
    await q.query(
      `CREATE INDEX reservations_resync ON reservations (resync_at) WHERE resync_at IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX reservations_resync`);
    await q.query(`ALTER TABLE reservations DROP COLUMN resync_at`);
  }
}
