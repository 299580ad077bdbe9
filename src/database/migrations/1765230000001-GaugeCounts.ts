import { MigrationInterface, QueryRunner } from 'typeorm';

const POOLS = `('freepool', 'shared', 'recycle', 'reservation')`;

/**
 * Counts for /metrics kept as they change: each change of hosts, pool membership or
 * leases appends signed rows to pool_host_counts or lease_counts (appends only, so
 * concurrent changes never wait on one another); a scrape sums them, and compaction
 * (the scrape, the manager's maintenance) folds them into one row per label set. The
 * scrape's cost follows the changes since the last compaction, not the fleet.
 */
export class GaugeCounts1765230000001 implements MigrationInterface {
  name = 'GaugeCounts1765230000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE pool_host_counts (
        pool varchar(16) NOT NULL, reservable boolean NOT NULL, n bigint NOT NULL)`);
    await q.query(`
      CREATE TABLE lease_counts (
        status varchar(32) NOT NULL, degraded boolean NOT NULL, n bigint NOT NULL)`);
    await q.query(`
      INSERT INTO pool_host_counts (pool, reservable, n)
      SELECT coalesce(p.kind, 'none'), h.reservable, count(*)
        FROM hosts h LEFT JOIN aggregate_hosts p ON p.host_id = h.id AND p.kind IN ${POOLS}
       GROUP BY 1, 2`);
    await q.query(`
      INSERT INTO lease_counts (status, degraded, n)
      SELECT status, degraded, count(*) FROM leases GROUP BY 1, 2`);

    // Statement triggers with transition tables: a bulk change appends a row per label set.
    await q.query(`
      CREATE FUNCTION count_leases() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO lease_counts SELECT status, degraded, count(*) FROM new_rows GROUP BY 1, 2;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO lease_counts SELECT status, degraded, -count(*) FROM old_rows GROUP BY 1, 2;
        ELSE
          INSERT INTO lease_counts
          SELECT status, degraded, sum(d) FROM (
            SELECT status, degraded, 1 AS d FROM new_rows
            UNION ALL SELECT status, degraded, -1 FROM old_rows) c
           GROUP BY 1, 2 HAVING sum(d) <> 0;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER leases_count_insert AFTER INSERT ON leases
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_leases()`);
    await q.query(`CREATE TRIGGER leases_count_update AFTER UPDATE ON leases
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION count_leases()`);
    await q.query(`CREATE TRIGGER leases_count_delete AFTER DELETE ON leases
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_leases()`);

    // A pool membership moves its host from 'none' to the pool and back; a host without
    // one is in 'none'. A host's own change moves it within its current pool.
    // A function reads only the transition tables its trigger has (one per operation).
    await q.query(`
      CREATE FUNCTION count_pool_members() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          INSERT INTO pool_host_counts
          SELECT pool, reservable, sum(d) FROM (
            SELECT m.kind AS pool, h.reservable, count(*) AS d
              FROM new_rows m JOIN hosts h ON h.id = m.host_id WHERE m.kind IN ${POOLS} GROUP BY 1, 2
            UNION ALL
            SELECT 'none', h.reservable, -count(*)
              FROM new_rows m JOIN hosts h ON h.id = m.host_id WHERE m.kind IN ${POOLS} GROUP BY 1, 2) c
           GROUP BY 1, 2 HAVING sum(d) <> 0;
        END IF;
        IF TG_OP <> 'INSERT' THEN
          -- A membership deleted with its host (cascade) finds no host: the host counted it.
          INSERT INTO pool_host_counts
          SELECT pool, reservable, sum(d) FROM (
            SELECT m.kind AS pool, h.reservable, -count(*) AS d
              FROM old_rows m JOIN hosts h ON h.id = m.host_id WHERE m.kind IN ${POOLS} GROUP BY 1, 2
            UNION ALL
            SELECT 'none', h.reservable, count(*)
              FROM old_rows m JOIN hosts h ON h.id = m.host_id WHERE m.kind IN ${POOLS} GROUP BY 1, 2) c
           GROUP BY 1, 2 HAVING sum(d) <> 0;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION count_pool_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO pool_host_counts
          SELECT 'none', reservable, count(*) FROM new_rows GROUP BY 1, 2;
        ELSE
          -- Only a change of reservable moves a host between counts.
          INSERT INTO pool_host_counts
          SELECT pool, reservable, sum(d) FROM (
            SELECT coalesce(p.kind, 'none') AS pool, n.reservable, 1 AS d
              FROM new_rows n JOIN old_rows o ON o.id = n.id AND o.reservable <> n.reservable
              LEFT JOIN aggregate_hosts p ON p.host_id = n.id AND p.kind IN ${POOLS}
            UNION ALL
            SELECT coalesce(p.kind, 'none'), o.reservable, -1
              FROM new_rows n JOIN old_rows o ON o.id = n.id AND o.reservable <> n.reservable
              LEFT JOIN aggregate_hosts p ON p.host_id = o.id AND p.kind IN ${POOLS}) c
           GROUP BY 1, 2 HAVING sum(d) <> 0;
        END IF;
        RETURN NULL;
      END $$`);
    // Before the delete, while the host's pool membership is still there to read.
    await q.query(`
      CREATE FUNCTION uncount_pool_host() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO pool_host_counts
        SELECT coalesce((SELECT kind FROM aggregate_hosts
                          WHERE host_id = OLD.id AND kind IN ${POOLS} LIMIT 1), 'none'),
               OLD.reservable, -1;
        RETURN OLD;
      END $$`);
    for (const [op, ref] of [
      ['INSERT', 'NEW TABLE AS new_rows'],
      ['UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ['DELETE', 'OLD TABLE AS old_rows'],
    ]) {
      await q.query(`CREATE TRIGGER aggregate_hosts_count_${op.toLowerCase()} AFTER ${op}
        ON aggregate_hosts REFERENCING ${ref} FOR EACH STATEMENT
        EXECUTE FUNCTION count_pool_members()`);
    }
    await q.query(`CREATE TRIGGER hosts_count_insert AFTER INSERT ON hosts
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_pool_hosts()`);
    await q.query(`CREATE TRIGGER hosts_count_update AFTER UPDATE ON hosts
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION count_pool_hosts()`);
    await q.query(`CREATE TRIGGER hosts_count_delete BEFORE DELETE ON hosts
      FOR EACH ROW EXECUTE FUNCTION uncount_pool_host()`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const op of ['insert', 'update', 'delete']) {
      await q.query(`DROP TRIGGER leases_count_${op} ON leases`);
      await q.query(`DROP TRIGGER aggregate_hosts_count_${op} ON aggregate_hosts`);
      await q.query(`DROP TRIGGER hosts_count_${op} ON hosts`);
    }
    await q.query(`DROP FUNCTION count_leases()`);
    await q.query(`DROP FUNCTION count_pool_members()`);
    await q.query(`DROP FUNCTION count_pool_hosts()`);
    await q.query(`DROP FUNCTION uncount_pool_host()`);
    await q.query(`DROP TABLE lease_counts`);
    await q.query(`DROP TABLE pool_host_counts`);
  }
}
