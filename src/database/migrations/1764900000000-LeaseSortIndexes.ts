import { MigrationInterface, QueryRunner } from 'typeorm';

/** The lease list's other sort keys, each with the id that breaks its ties. */
const INDEXES = {
  leases_name: 'name',
  leases_start: 'start_at',
  leases_end: 'end_at',
  leases_status: 'status',
};

/**
 * The lease list sorted by name, start_date, end_date or status for a caller who sees
 * every project: each page (asc or desc, after a marker) is an index range instead of a
 * sort of the whole table (150-200 ms a page at 100,000 leases before). created_at has
 * leases_created (LeaseListIndex).
 */
export class LeaseSortIndexes1764900000000 implements MigrationInterface {
  name = 'LeaseSortIndexes1764900000000';

  async up(q: QueryRunner): Promise<void> {
    for (const [index, column] of Object.entries(INDEXES)) {
      await q.query(`CREATE INDEX ${index} ON leases (${column}, id)`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const index of Object.keys(INDEXES)) {
      await q.query(`DROP INDEX ${index}`);
    }
  }
}
