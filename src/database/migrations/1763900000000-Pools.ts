import { MigrationInterface, QueryRunner } from 'typeorm';

/** Hosts, their properties, pools (aggregates) and host allocations. */
export class Pools1763900000000 implements MigrationInterface {
  name = 'Pools1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE hosts (
        id serial PRIMARY KEY,
        hypervisor_hostname varchar(255) NOT NULL UNIQUE,
        service_name varchar(255) NOT NULL,
        vcpus integer NOT NULL CHECK (vcpus >= 0),
        memory_mb integer NOT NULL CHECK (memory_mb >= 0),
        local_gb integer NOT NULL CHECK (local_gb >= 0),
        hypervisor_type varchar(255) NOT NULL,
        hypervisor_version integer NOT NULL,
        cpu_info text NOT NULL,
        availability_zone varchar(255) NOT NULL,
        reservable boolean NOT NULL DEFAULT true,
        -- set while the compute driver reports the host down (cleared when it is back)
        reported_down boolean NOT NULL DEFAULT false,
        capabilities jsonb NOT NULL DEFAULT '{}',
        trust_id varchar(36),
        created_at timestamptz NOT NULL,
        updated_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE resource_properties (
        id serial PRIMARY KEY,
        resource_type varchar(255) NOT NULL,
        property_name varchar(64) NOT NULL,
        private boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        updated_at timestamptz,
        UNIQUE (resource_type, property_name)
      )`);
    await q.query(`
      CREATE TABLE aggregates (
        id serial PRIMARY KEY,
        name varchar(255) NOT NULL UNIQUE,
        kind varchar(16) NOT NULL
          CHECK (kind IN ('freepool','shared','recycle','reservation','instance','topology')),
        availability_zone varchar(255),
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        updated_at timestamptz
      )`);
    await q.query(`
      CREATE TABLE aggregate_hosts (
        aggregate_id integer NOT NULL REFERENCES aggregates (id) ON DELETE CASCADE,
        host_id integer NOT NULL REFERENCES hosts (id) ON DELETE CASCADE,
        kind varchar(16) NOT NULL,
        since timestamptz NOT NULL,
        PRIMARY KEY (aggregate_id, host_id)
      )`);
    // A host sits in exactly one pool at a time; topology labels and instance-reservation
    // aggregates are memberships on top of the pool (Blazar keeps those hosts in the freepool).
    await q.query(
      `CREATE UNIQUE INDEX aggregate_hosts_one_pool ON aggregate_hosts (host_id)
         WHERE kind IN ('freepool', 'shared', 'recycle', 'reservation')`,
    );
    await q.query(`CREATE INDEX aggregate_hosts_kind ON aggregate_hosts (kind, host_id)`);
    await q.query(`
      CREATE TABLE host_allocations (
        id uuid PRIMARY KEY,
        reservation_id uuid NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
        host_id integer NOT NULL REFERENCES hosts (id),
        during tstzrange NOT NULL CHECK (NOT isempty(during)),
        CONSTRAINT host_allocations_no_overlap EXCLUDE USING gist (host_id WITH =, during WITH &&)
      )`);
    await q.query(`CREATE INDEX host_allocations_reservation ON host_allocations (reservation_id)`);
    await q.query(`CREATE INDEX host_allocations_during ON host_allocations USING gist (during)`);
    // Walks allocation ends in time order for the earliest-availability search.
    await q.query(`CREATE INDEX host_allocations_ends ON host_allocations (upper(during))`);
    // Bumped by every change of hosts or pool membership, in the changing transaction:
    // readers cache what depends on pools (the scheduler filter) against this number.
    await q.query(
      `CREATE TABLE pool_state (id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL)`,
    );
    await q.query(`INSERT INTO pool_state VALUES (1, 0)`);
    await q.query(`
      CREATE FUNCTION bump_pool_state() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE pool_state SET version = version + 1 WHERE id = 1;
        RETURN NULL;
      END $$`);
    for (const table of ['hosts', 'aggregates', 'aggregate_hosts']) {
      await q.query(
        `CREATE TRIGGER ${table}_pool_state AFTER INSERT OR UPDATE OR DELETE ON ${table}
         FOR EACH STATEMENT EXECUTE FUNCTION bump_pool_state()`,
      );
    }
    await q.query(
      `INSERT INTO aggregates (name, kind, created_at) VALUES ('freepool', 'freepool', now()),
         ('shared', 'shared', now()), ('recycle', 'recycle', now())`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE host_allocations`);
    for (const table of ['hosts', 'aggregates', 'aggregate_hosts']) {
      await q.query(`DROP TRIGGER ${table}_pool_state ON ${table}`);
    }
    await q.query(`DROP FUNCTION bump_pool_state()`);
    await q.query(`DROP TABLE pool_state`);
    await q.query(`DROP TABLE aggregate_hosts`);
    await q.query(`DROP TABLE aggregates`);
    await q.query(`DROP TABLE resource_properties`);
    await q.query(`DROP TABLE hosts`);
  }
}
