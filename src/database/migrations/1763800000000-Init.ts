import { MigrationInterface, QueryRunner } from 'typeorm';

/** Leases, reservations, events and idempotency keys. */
export class Init1763800000000 implements MigrationInterface {
  name = 'Init1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS btree_gist`);
    await q.query(`
      CREATE TABLE leases (
        id uuid PRIMARY KEY,
        name varchar(255) NOT NULL,
        project_id varchar(255) NOT NULL,
        user_id varchar(255) NOT NULL,
        start_at timestamptz NOT NULL,
        end_at timestamptz NOT NULL,
        status varchar(16) NOT NULL,
        degraded boolean NOT NULL DEFAULT false,
        version integer NOT NULL DEFAULT 1,
        trust_id varchar(36),
        created_at timestamptz NOT NULL,
        updated_at timestamptz,
        CONSTRAINT leases_window CHECK (end_at > start_at),
        CONSTRAINT leases_status CHECK (status IN ('PENDING','ACTIVE','TERMINATED','ERROR',
          'CREATING','STARTING','UPDATING','TERMINATING','DELETING'))
      )`);
    await q.query(`CREATE INDEX leases_project ON leases (project_id, created_at, id)`);
    await q.query(`CREATE INDEX leases_window_idx ON leases (start_at, end_at)`);
    await q.query(`
      CREATE TABLE reservations (
        id uuid PRIMARY KEY,
        lease_id uuid NOT NULL REFERENCES leases (id) ON DELETE CASCADE,
        resource_type varchar(66) NOT NULL,
        resource_id varchar(255),
        status varchar(16) NOT NULL
          CHECK (status IN ('pending','active','deleted','error')),
        missing_resources boolean NOT NULL DEFAULT false,
        resources_changed boolean NOT NULL DEFAULT false,
        params jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        updated_at timestamptz
      )`);
    await q.query(`CREATE INDEX reservations_lease ON reservations (lease_id)`);
    await q.query(`
      CREATE TABLE events (
        id uuid PRIMARY KEY,
        lease_id uuid NOT NULL REFERENCES leases (id) ON DELETE CASCADE,
        event_type varchar(32) NOT NULL
          CHECK (event_type IN ('start_lease','before_end_lease','end_lease')),
        time timestamptz NOT NULL,
        status varchar(16) NOT NULL
          CHECK (status IN ('UNDONE','IN_PROGRESS','DONE','ERROR')),
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        retry_at timestamptz,
        claimed_by varchar(255),
        claim_expires_at timestamptz,
        created_at timestamptz NOT NULL,
        updated_at timestamptz,
        CONSTRAINT events_one_per_type UNIQUE (lease_id, event_type),
        CONSTRAINT events_claim CHECK ((status = 'IN_PROGRESS') = (claim_expires_at IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX events_due ON events (status, time)`);
    // At most one running event per lease, whatever the managers do.
    await q.query(
      `CREATE UNIQUE INDEX events_one_running ON events (lease_id) WHERE status = 'IN_PROGRESS'`,
    );
    await q.query(`
      CREATE TABLE idempotency_keys (
        project_id varchar(255) NOT NULL,
        key varchar(255) NOT NULL,
        request_hash varchar(64) NOT NULL,
        response jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (project_id, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
    await q.query(`DROP TABLE events`);
    await q.query(`DROP TABLE reservations`);
    await q.query(`DROP TABLE leases`);
  }
}
