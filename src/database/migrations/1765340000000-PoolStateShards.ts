import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rows the version is spread over, picked by transaction id: transactions that commit
 * together have nearby ids, so they pick different rows.
 */
const SHARDS = 64;

/**
 * The pool version is spread over SHARDS rows, each transaction bumping one: a bump holds its row's lock from the commit's last step to its end (the WAL
 * flush), so with one row every pool change of every manager queued there, one flush
 * after another (the storm's main lock wait once the events were short). `pool_state`
 * becomes a view of the sum, which still changes with every committed pool change.
 */
export class PoolStateShards1765340000000 implements MigrationInterface {
  name = 'PoolStateShards1765340000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE pool_state_shards (id integer PRIMARY KEY, version bigint NOT NULL)`,
    );
    await q.query(
      `INSERT INTO pool_state_shards (id, version)
       SELECT s, CASE WHEN s = 1 THEN (SELECT version FROM pool_state) ELSE 0 END
         FROM generate_series(1, ${SHARDS}) s`,
    );
    await q.query(`DROP TABLE pool_state`);
    await q.query(
      `CREATE VIEW pool_state AS
       SELECT 1 AS id, sum(version)::bigint AS version FROM pool_state_shards`,
    );
    await q.query(`
      CREATE OR REPLACE FUNCTION bump_pool_state() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        shard integer;
      BEGIN
        -- One bump per transaction, however many rows it changed.
        IF coalesce(current_setting('climate.pool_bumped', true), '') <> 'yes' THEN
          PERFORM set_config('climate.pool_bumped', 'yes', true);
          shard := 1 + (pg_current_xact_id()::text::bigint % ${SHARDS})::integer;
          UPDATE pool_state_shards SET version = version + 1 WHERE id = shard;
        END IF;
        RETURN NULL;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION bump_pool_state() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF coalesce(current_setting('climate.pool_bumped', true), '') <> 'yes' THEN
          PERFORM set_config('climate.pool_bumped', 'yes', true);
          UPDATE pool_state SET version = version + 1 WHERE id = 1;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`DROP VIEW pool_state`);
    await q.query(
      `CREATE TABLE pool_state (id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL)`,
    );
    await q.query(
      `INSERT INTO pool_state SELECT 1, coalesce(sum(version), 0) FROM pool_state_shards`,
    );
    await q.query(`DROP TABLE pool_state_shards`);
  }
}
