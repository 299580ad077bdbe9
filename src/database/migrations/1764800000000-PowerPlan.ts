import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The power plan's record (docs/power.md): each host's power state, with a deadline while
 * it is on its way (`booting`, `stopping`) and the claim of the manager acting on it;
 * the admin's "always on" mark; and a log of the states each host went through (the
 * host-hours off, and the transitions per minute across replicas).
 */
export class PowerPlan1764800000000 implements MigrationInterface {
  name = 'PowerPlan1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE host_power (
        host_id integer PRIMARY KEY REFERENCES hosts(id) ON DELETE CASCADE,
        state varchar(16) NOT NULL DEFAULT 'on'
          CHECK (state IN ('on', 'off', 'booting', 'stopping')),
        deadline timestamptz,
        always_on boolean NOT NULL DEFAULT false,
        changed_at timestamptz NOT NULL,
        claimed_by varchar(255),
        claim_expires_at timestamptz,
        CONSTRAINT host_power_deadline CHECK ((state IN ('booting', 'stopping')) = (deadline IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX host_power_not_on ON host_power (state) WHERE state <> 'on'`);
    await q.query(`INSERT INTO host_power (host_id, changed_at) SELECT id, now() FROM hosts`);
    await q.query(`
      CREATE TABLE power_log (
        id bigserial PRIMARY KEY,
        host_id integer NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
        state varchar(16) NOT NULL CHECK (state IN ('on', 'off', 'booting', 'stopping')),
        at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX power_log_host ON power_log (host_id, at)`);
    await q.query(`CREATE INDEX power_log_at ON power_log (at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE power_log`);
    await q.query(`DROP TABLE host_power`);
  }
}
