import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Counts of host_busy, so that the capacity plan and the availability search read rows
 * per day, not per host (see src/pools/busy-counts.ts for how they are read):
 * - host_busy.in_pool: the host was in the reservation pool when its stretches were built;
 * - host_busy_counts: per UTC day and per UTC hour, how many in-pool stretches begin
 *   (lo) and end (up - 1 microsecond) in it;
 * - host_busy_hosts and host_busy_totals: each host's pool state as last built, and how
 *   many hosts are in the pool and out of it.
 * All are written only by the host_busy refresh (src/pools/host-busy.ts), for the hosts
 * marked in host_busy_changes; besides allocations, a host's insert, delete, change of
 * reservable and move into or out of the shared pool now mark it. A TRUNCATE of hosts,
 * pool memberships or allocations empties all of them and marks every host.
 */
export class HostBusyCounts1765410000000 implements MigrationInterface {
  name = 'HostBusyCounts1765410000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM host_busy`);
    await q.query(`ALTER TABLE host_busy ADD COLUMN in_pool boolean NOT NULL DEFAULT false`);
    await q.query(`CREATE INDEX host_busy_lo ON host_busy (lo) WHERE in_pool`);
    await q.query(`CREATE INDEX host_busy_up ON host_busy (up) WHERE in_pool`);
    // Free gaps as points (where the gap begins, how long it is), in seconds: a box finds
    // the gaps shorter than a step or window near it without reading the long ones.
    await q.query(
      `CREATE INDEX host_busy_gaps ON host_busy USING spgist (
         point(extract(epoch FROM prev_end - timestamptz '2000-01-01 00:00:00+00')::float8,
               extract(epoch FROM lo - prev_end)::float8) kd_point_ops)
       WHERE in_pool AND prev_end IS NOT NULL`,
    );
    await q.query(
      `CREATE TABLE host_busy_counts (
         grain varchar(4) NOT NULL CHECK (grain IN ('day', 'hour')),
         t timestamptz NOT NULL,
         starts integer NOT NULL,
         ends integer NOT NULL,
         PRIMARY KEY (grain, t))`,
    );
    await q.query(
      `CREATE TABLE host_busy_hosts (host_id integer PRIMARY KEY, in_pool boolean NOT NULL)`,
    );
    await q.query(
      `CREATE TABLE host_busy_totals (in_pool boolean PRIMARY KEY, hosts integer NOT NULL)`,
    );
    await q.query(`INSERT INTO host_busy_totals VALUES (true, 0), (false, 0)`);

    await q.query(
      `CREATE FUNCTION host_busy_mark_host() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO host_busy_changes (host_id)
         VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END);
         RETURN NULL;
       END $$`,
    );
    await q.query(`CREATE TRIGGER hosts_busy_mark AFTER INSERT OR DELETE ON hosts
      FOR EACH ROW EXECUTE FUNCTION host_busy_mark_host()`);
    await q.query(`CREATE TRIGGER hosts_busy_update AFTER UPDATE OF reservable ON hosts
      FOR EACH ROW WHEN (OLD.reservable IS DISTINCT FROM NEW.reservable)
      EXECUTE FUNCTION host_busy_mark_host()`);
    // Only the shared pool changes what the plan counts; host_busy_mark() takes host_id.
    await q.query(`CREATE TRIGGER aggregate_hosts_busy_insert AFTER INSERT ON aggregate_hosts
      FOR EACH ROW WHEN (NEW.kind = 'shared') EXECUTE FUNCTION host_busy_mark()`);
    await q.query(`CREATE TRIGGER aggregate_hosts_busy_delete AFTER DELETE ON aggregate_hosts
      FOR EACH ROW WHEN (OLD.kind = 'shared') EXECUTE FUNCTION host_busy_mark()`);
    await q.query(`CREATE TRIGGER aggregate_hosts_busy_update AFTER UPDATE ON aggregate_hosts
      FOR EACH ROW WHEN (OLD.kind = 'shared' OR NEW.kind = 'shared')
      EXECUTE FUNCTION host_busy_mark()`);

    await q.query(
      `CREATE OR REPLACE FUNCTION host_busy_mark_all() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         DELETE FROM host_busy;
         DELETE FROM host_busy_counts;
         DELETE FROM host_busy_hosts;
         UPDATE host_busy_totals SET hosts = 0;
         INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts;
         RETURN NULL;
       END $$`,
    );
    for (const table of ['hosts', 'aggregate_hosts']) {
      await q.query(
        `CREATE TRIGGER ${table}_busy_truncate AFTER TRUNCATE ON ${table}
           FOR EACH STATEMENT EXECUTE FUNCTION host_busy_mark_all()`,
      );
    }
    // Every host rebuilt by the next refresh, with its pool state and counts.
    await q.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['hosts', 'aggregate_hosts']) {
      await q.query(`DROP TRIGGER ${table}_busy_truncate ON ${table}`);
    }
    await q.query(
      `CREATE OR REPLACE FUNCTION host_busy_mark_all() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         DELETE FROM host_busy;
         INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts;
         RETURN NULL;
       END $$`,
    );
    for (const op of ['insert', 'delete', 'update']) {
      await q.query(`DROP TRIGGER aggregate_hosts_busy_${op} ON aggregate_hosts`);
    }
    await q.query(`DROP TRIGGER hosts_busy_update ON hosts`);
    await q.query(`DROP TRIGGER hosts_busy_mark ON hosts`);
    await q.query(`DROP FUNCTION host_busy_mark_host()`);
    await q.query(`DROP TABLE host_busy_totals`);
    await q.query(`DROP TABLE host_busy_hosts`);
    await q.query(`DROP TABLE host_busy_counts`);
    await q.query(`DROP INDEX host_busy_gaps`);
    await q.query(`DROP INDEX host_busy_up`);
    await q.query(`DROP INDEX host_busy_lo`);
    await q.query(`ALTER TABLE host_busy DROP COLUMN in_pool`);
    await q.query(`INSERT INTO host_busy_changes (host_id) SELECT id FROM hosts`);
  }
}
