import { MigrationInterface, QueryRunner } from 'typeorm';

const POOLS = `('freepool', 'shared', 'recycle', 'reservation')`;

/**
 * The power plan kept as it changes (src/power/plan-refresh.ts), so that the manager's run
 * and GET /v1/power-plan cost what changed, not the fleet:
 *
 * - power_plan_changes: hosts whose situation changed since the plan last looked (appends
 *   only, as host_busy_changes): their busy time (host_busy rebuilt for them), power
 *   record, pool membership, reservable flag, or the host itself (registered, deleted).
 * - power_plan: each host's plan as last computed: what it should be now, what the
 *   manager should do now (act), and when the plan must be looked at again (recheck_at)
 *   even if nothing changes (a time when it can change by the clock alone).
 * - power_windows: each host's planned off stretches (up NULL: past the stored horizon).
 * - power_off_spans: each host's off stretches from power_log (up NULL: still off).
 * - power_sums: for the fleet's host-hours off, running sums of the stretches of one of
 *   the two tables, at a point in time: c, the stretches open there; f, milliseconds of
 *   them before it. Host-hours in [a, b) are f(b) - f(a); the points move with the clock.
 * - power_state_counts: hosts per power state, as power_plan holds them.
 * - power_plan_settings: the settings the plan was computed with (a change recomputes all).
 */
export class PowerPlanStore1765331000000 implements MigrationInterface {
  name = 'PowerPlanStore1765331000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE power_plan_changes (host_id integer NOT NULL)`);
    await q.query(`
      CREATE TABLE power_plan (
        host_id integer PRIMARY KEY,
        state varchar(16) NOT NULL,
        keep_on boolean NOT NULL,
        want varchar(3) NOT NULL CHECK (want IN ('on', 'off')),
        now_to varchar(3) CHECK (now_to IN ('on', 'off')),
        act varchar(3) CHECK (act IN ('on', 'off')),
        needed_at double precision NOT NULL,
        recheck_at timestamptz NOT NULL,
        computed_at timestamptz NOT NULL)`);
    await q.query(`CREATE INDEX power_plan_recheck ON power_plan (recheck_at)`);
    // The manager's candidates in its order, however many hosts want switching.
    await q.query(
      `CREATE INDEX power_plan_act_on ON power_plan (needed_at, host_id) WHERE act = 'on'`,
    );
    await q.query(`CREATE INDEX power_plan_act_off ON power_plan (host_id) WHERE act = 'off'`);
    await q.query(
      `CREATE INDEX power_plan_now_to ON power_plan (host_id) WHERE now_to IS NOT NULL`,
    );
    for (const table of ['power_windows', 'power_off_spans']) {
      await q.query(`
        CREATE TABLE ${table} (
          host_id integer NOT NULL, lo timestamptz NOT NULL, up timestamptz,
          CHECK (up >= lo))`);
      await q.query(`CREATE INDEX ${table}_host ON ${table} (host_id, lo)`);
      await q.query(`CREATE INDEX ${table}_lo ON ${table} (lo)`);
      await q.query(`CREATE INDEX ${table}_up ON ${table} (up)`);
    }
    await q.query(`
      CREATE TABLE power_sums (
        name varchar(16) PRIMARY KEY, at timestamptz NOT NULL, c bigint NOT NULL, f numeric NOT NULL)`);
    await q.query(`
      INSERT INTO power_sums (name, at, c, f)
      VALUES ('plan_now', now(), 0, 0), ('plan_next', now(), 0, 0),
             ('past_now', now(), 0, 0), ('past_back', now(), 0, 0)`);
    await q.query(
      `CREATE TABLE power_state_counts (state varchar(16) PRIMARY KEY, n bigint NOT NULL)`,
    );
    await q.query(`
      INSERT INTO power_state_counts (state, n)
      VALUES ('on', 0), ('off', 0), ('booting', 0), ('stopping', 0)`);
    await q.query(`
      CREATE TABLE power_plan_settings (
        id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1), settings text NOT NULL)`);
    await q.query(`INSERT INTO power_plan_settings (settings) VALUES ('')`);
    await this.triggers(q);
    // Every host is looked at once, by the first run.
    await q.query(`INSERT INTO power_plan_changes (host_id) SELECT id FROM hosts`);
  }

  /** Statement triggers with transition tables: a bulk change appends one row per host. */
  private async triggers(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION power_plan_mark() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO power_plan_changes (host_id) SELECT DISTINCT host_id FROM old_rows;
        RETURN NULL;
      END $$`);
    // A host's busy time: host_busy is rebuilt for the hosts whose allocations changed,
    // taking their rows of host_busy_changes in the same transaction; a create only adds
    // such rows and writes nothing more.
    await q.query(`CREATE TRIGGER host_busy_changes_power AFTER DELETE ON host_busy_changes
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION power_plan_mark()`);
    await q.query(`
      CREATE FUNCTION power_plan_mark_members() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'DELETE' THEN
          INSERT INTO power_plan_changes (host_id)
          SELECT DISTINCT host_id FROM new_rows WHERE kind IN ${POOLS};
        END IF;
        IF TG_OP <> 'INSERT' THEN
          INSERT INTO power_plan_changes (host_id)
          SELECT DISTINCT host_id FROM old_rows WHERE kind IN ${POOLS};
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION power_plan_mark_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO power_plan_changes (host_id) SELECT id FROM new_rows;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO power_plan_changes (host_id) SELECT id FROM old_rows;
        ELSE
          INSERT INTO power_plan_changes (host_id)
          SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
           WHERE n.reservable IS DISTINCT FROM o.reservable;
        END IF;
        RETURN NULL;
      END $$`);
    for (const [op, ref] of [
      ['INSERT', 'NEW TABLE AS new_rows'],
      ['UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ['DELETE', 'OLD TABLE AS old_rows'],
    ]) {
      const lower = op.toLowerCase();
      await q.query(`CREATE TRIGGER aggregate_hosts_power_${lower} AFTER ${op} ON aggregate_hosts
        REFERENCING ${ref} FOR EACH STATEMENT EXECUTE FUNCTION power_plan_mark_members()`);
      await q.query(`CREATE TRIGGER hosts_power_${lower} AFTER ${op} ON hosts
        REFERENCING ${ref} FOR EACH STATEMENT EXECUTE FUNCTION power_plan_mark_hosts()`);
    }
    // The power record: what the plan reads of it (a claim alone changes nothing).
    await q.query(`
      CREATE FUNCTION power_plan_mark_power() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO power_plan_changes (host_id)
        VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.host_id ELSE NEW.host_id END);
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER host_power_plan_insert AFTER INSERT OR DELETE ON host_power
      FOR EACH ROW EXECUTE FUNCTION power_plan_mark_power()`);
    await q.query(`CREATE TRIGGER host_power_plan_update AFTER UPDATE ON host_power
      FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                      OR OLD.changed_at IS DISTINCT FROM NEW.changed_at
                      OR OLD.always_on IS DISTINCT FROM NEW.always_on
                      OR OLD.holds_servers IS DISTINCT FROM NEW.holds_servers)
      EXECUTE FUNCTION power_plan_mark_power()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER host_power_plan_update ON host_power`);
    await q.query(`DROP TRIGGER host_power_plan_insert ON host_power`);
    for (const op of ['insert', 'update', 'delete']) {
      await q.query(`DROP TRIGGER aggregate_hosts_power_${op} ON aggregate_hosts`);
      await q.query(`DROP TRIGGER hosts_power_${op} ON hosts`);
    }
    await q.query(`DROP TRIGGER host_busy_changes_power ON host_busy_changes`);
    for (const fn of ['power_plan_mark_power', 'power_plan_mark_hosts']) {
      await q.query(`DROP FUNCTION ${fn}()`);
    }
    await q.query(`DROP FUNCTION power_plan_mark_members()`);
    await q.query(`DROP FUNCTION power_plan_mark()`);
    for (const table of [
      'power_plan_settings',
      'power_state_counts',
      'power_sums',
      'power_off_spans',
      'power_windows',
      'power_plan',
      'power_plan_changes',
    ]) {
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
