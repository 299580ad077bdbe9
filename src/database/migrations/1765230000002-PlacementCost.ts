import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What each host costs placement: the sum of the weights (HOST_WEIGHTS, copied into
 * placement_weights at startup) of the properties it has. Picks and slot packing take the
 * cheapest hosts first, so requests that do not ask for a scarce property (a GPU) leave
 * the hosts with it free. Kept on the host row with an index, so that a pick still walks
 * an index and stops early whatever the fleet.
 */
export class PlacementCost1765230000002 implements MigrationInterface {
  name = 'PlacementCost1765230000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE placement_weights (
        property varchar(64) PRIMARY KEY, weight integer NOT NULL CHECK (weight >= 0))`);
    await q.query(`ALTER TABLE hosts ADD COLUMN placement_cost integer NOT NULL DEFAULT 0`);
    // A property a host "has": any value but an empty or false one.
    await q.query(`
      CREATE FUNCTION host_placement_cost(caps jsonb) RETURNS integer LANGUAGE sql STABLE AS $$
        SELECT coalesce(sum(w.weight), 0)::int FROM placement_weights w
         WHERE lower(coalesce(caps ->> w.property, '')) NOT IN ('', 'false', '0', 'no', 'off')
      $$`);
    await q.query(`
      CREATE FUNCTION set_placement_cost() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.placement_cost := host_placement_cost(NEW.capabilities);
        RETURN NEW;
      END $$`);
    await q.query(`CREATE TRIGGER hosts_placement_cost BEFORE INSERT OR UPDATE OF capabilities
      ON hosts FOR EACH ROW EXECUTE FUNCTION set_placement_cost()`);
    await q.query(`CREATE INDEX hosts_placement ON hosts (placement_cost, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX hosts_placement`);
    await q.query(`DROP TRIGGER hosts_placement_cost ON hosts`);
    await q.query(`DROP FUNCTION set_placement_cost()`);
    await q.query(`DROP FUNCTION host_placement_cost(jsonb)`);
    await q.query(`ALTER TABLE hosts DROP COLUMN placement_cost`);
    await q.query(`DROP TABLE placement_weights`);
  }
}
