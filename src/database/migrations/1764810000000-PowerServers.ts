import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Whether the power plan last found servers on a host (it is then kept on), so that the
 * plan's report and figures know it without asking the compute service for every host.
 */
export class PowerServers1764810000000 implements MigrationInterface {
  name = 'PowerServers1764810000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE host_power ADD COLUMN holds_servers boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE host_power DROP COLUMN holds_servers`);
  }
}
