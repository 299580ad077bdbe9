import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The default order of the lease list (created_at, id) for a caller who sees every project
 * (admins, Blazar's CLI): without it each page of 500 sorted the whole table (24 ms a page
 * at 100,000 leases, a sequential scan and a top-N sort); with it a page is an index range
 * (0.44 ms). Project callers keep leases_project (project_id, created_at, id).
 */
export class LeaseListIndex1764500000000 implements MigrationInterface {
  name = 'LeaseListIndex1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX leases_created ON leases (created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX leases_created`);
  }
}
