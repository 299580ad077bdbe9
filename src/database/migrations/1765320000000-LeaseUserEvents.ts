import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * User-defined events (a create's or update's `events`), which Blazar stores and never
 * runs: kept in the lease's row, out of the events table the manager claims from. NULL
 * (the usual case) is none.
 */
export class LeaseUserEvents1765320000000 implements MigrationInterface {
  name = 'LeaseUserEvents1765320000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE leases ADD COLUMN user_events jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE leases DROP COLUMN user_events`);
  }
}
