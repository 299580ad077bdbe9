import { MigrationInterface, QueryRunner } from 'typeorm';

const POOLS = `('freepool', 'shared', 'recycle', 'reservation')`;

const OPS = [
  ['INSERT', 'NEW TABLE AS new_rows'],
  ['UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
  ['DELETE', 'OLD TABLE AS old_rows'],
] as const;

/**
 * SQL of one side of a membership change (`rows`, a transition table; `sign` 1 for the
 * memberships added, -1 for those removed): the power plan marks the pool members' hosts,
 * and pool_host_counts moves them between their pool and 'none', in one statement that
 * reads the transition table and joins hosts once. A membership deleted with its host
 * (cascade) finds no host: the host's own trigger counted it; it is still marked.
 */
function side(rows: string, sign: 1 | -1): string {
  return `WITH m AS MATERIALIZED (SELECT host_id, kind FROM ${rows} WHERE kind IN ${POOLS}),
            marked AS (INSERT INTO power_plan_changes (host_id) SELECT DISTINCT host_id FROM m)
       INSERT INTO pool_host_counts
       SELECT c.pool, h.reservable, sum(c.d)
         FROM m JOIN hosts h ON h.id = m.host_id
        CROSS JOIN LATERAL (VALUES (m.kind, ${sign}), ('none', ${-sign})) c(pool, d)
        GROUP BY 1, 2 HAVING sum(c.d) <> 0`;
}

/**
 * The storm's start and end events move hosts between pools and write instance
 * aggregates' members; each such statement on aggregate_hosts ran two statement triggers
 * (count_pool_members of GaugeCounts, power_plan_mark_members of PowerPlanStore), each
 * reading the transition tables again, and the counts joined hosts twice per side. One
 * trigger per operation now does both (pool_members_changed), and returns at once when
 * no row is a pool membership (instance and topology aggregates' members), so an
 * instance's start and end write nothing there. What they write is unchanged: the same
 * power_plan_changes rows (one per host and side) and the same pool_host_counts sums.
 */
export class PoolMemberTriggers1766200000000 implements MigrationInterface {
  name = 'PoolMemberTriggers1766200000000';

  async up(q: QueryRunner): Promise<void> {
    // A function reads only the transition tables its trigger has (one per operation):
    // the IFs are nested so that no expression names the other one.
    await q.query(`
      CREATE FUNCTION pool_members_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          IF EXISTS (SELECT 1 FROM new_rows WHERE kind IN ${POOLS}) THEN
            ${side('new_rows', 1)};
          END IF;
        END IF;
        IF TG_OP <> 'INSERT' THEN
          IF EXISTS (SELECT 1 FROM old_rows WHERE kind IN ${POOLS}) THEN
            ${side('old_rows', -1)};
          END IF;
        END IF;
        RETURN NULL;
      END $$`);
    for (const [op, ref] of OPS) {
      const lower = op.toLowerCase();
      await q.query(`DROP TRIGGER aggregate_hosts_count_${lower} ON aggregate_hosts`);
      await q.query(`DROP TRIGGER aggregate_hosts_power_${lower} ON aggregate_hosts`);
      await q.query(`CREATE TRIGGER aggregate_hosts_changed_${lower} AFTER ${op}
        ON aggregate_hosts REFERENCING ${ref} FOR EACH STATEMENT
        EXECUTE FUNCTION pool_members_changed()`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [op, ref] of OPS) {
      const lower = op.toLowerCase();
      await q.query(`DROP TRIGGER aggregate_hosts_changed_${lower} ON aggregate_hosts`);
      await q.query(`CREATE TRIGGER aggregate_hosts_count_${lower} AFTER ${op}
        ON aggregate_hosts REFERENCING ${ref} FOR EACH STATEMENT
        EXECUTE FUNCTION count_pool_members()`);
      await q.query(`CREATE TRIGGER aggregate_hosts_power_${lower} AFTER ${op}
        ON aggregate_hosts REFERENCING ${ref} FOR EACH STATEMENT
        EXECUTE FUNCTION power_plan_mark_members()`);
    }
    await q.query(`DROP FUNCTION pool_members_changed()`);
  }
}
