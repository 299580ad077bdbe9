import { MigrationInterface, QueryRunner } from 'typeorm';

const TABLES = ['hosts', 'aggregates', 'aggregate_hosts'];

/**
 * The pool_state bump moves to the commit: a deferred row trigger, once per transaction.
 * A statement trigger took the row's lock at the first pool change and held it for the
 * rest of the transaction, so every lease start and end in every manager queued on it;
 * now it is held from the commit's last step to its end. Readers keep their guarantee:
 * the bump commits with the change, so a version read after a commit differs.
 */
export class PoolStateAtCommit1765230000000 implements MigrationInterface {
  name = 'PoolStateAtCommit1765230000000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of TABLES) await q.query(`DROP TRIGGER ${table}_pool_state ON ${table}`);
    await q.query(`
      CREATE OR REPLACE FUNCTION bump_pool_state() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- One bump per transaction, however many rows it changed.
        IF coalesce(current_setting('climate.pool_bumped', true), '') <> 'yes' THEN
          PERFORM set_config('climate.pool_bumped', 'yes', true);
          UPDATE pool_state SET version = version + 1 WHERE id = 1;
        END IF;
        RETURN NULL;
      END $$`);
    for (const table of TABLES) {
      await q.query(
        `CREATE CONSTRAINT TRIGGER ${table}_pool_state AFTER INSERT OR UPDATE OR DELETE ON ${table}
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_pool_state()`,
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of TABLES) await q.query(`DROP TRIGGER ${table}_pool_state ON ${table}`);
    await q.query(`
      CREATE OR REPLACE FUNCTION bump_pool_state() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE pool_state SET version = version + 1 WHERE id = 1;
        RETURN NULL;
      END $$`);
    for (const table of TABLES) {
      await q.query(
        `CREATE TRIGGER ${table}_pool_state AFTER INSERT OR UPDATE OR DELETE ON ${table}
         FOR EACH STATEMENT EXECUTE FUNCTION bump_pool_state()`,
      );
    }
  }
}
