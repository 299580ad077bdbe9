import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The availability search walks the ends of whole-host allocations and instance slots
 * together, in time order: slots need the same index on their ends as hosts have.
 */
export class InstanceAllocationEnds1764100000000 implements MigrationInterface {
  name = 'InstanceAllocationEnds1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX instance_allocations_ends ON instance_allocations (upper(during))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX instance_allocations_ends`);
  }
}
