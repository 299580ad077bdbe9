import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The shared pool's members, for the "not shared" test of every host search. Without it,
 * at 100,000 hosts the planner reads the whole one-pool index (every host's membership)
 * on each search to find the few shared hosts.
 */
export class SharedPoolIndex1764300000000 implements MigrationInterface {
  name = 'SharedPoolIndex1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX aggregate_hosts_shared ON aggregate_hosts (host_id) WHERE kind = 'shared'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX aggregate_hosts_shared`);
  }
}
