import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * leases_window_idx (start_at, end_at) is served by leases_start (start_at, id) since
 * LeaseSortIndexes. The one query that limits leases by a start_at range (the
 * provisioning lead time) plans onto leases_start whether this index exists or not
 * (EXPLAIN at 100,000 leases); the others test start_at on leases reached by id. It cost
 * an insert on every lease create and a write on every date change. The check constraint
 * leases_window (end after start) stays.
 */
export class DropLeaseWindowIndex1765000000001 implements MigrationInterface {
  name = 'DropLeaseWindowIndex1765000000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX leases_window_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX leases_window_idx ON leases (start_at, end_at)`);
  }
}
