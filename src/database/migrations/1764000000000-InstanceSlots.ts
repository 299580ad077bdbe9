import { MigrationInterface, QueryRunner } from 'typeorm';

/** Instance slots reserved on hosts over time, and the claims servers make on them. */
export class InstanceSlots1764000000000 implements MigrationInterface {
  name = 'InstanceSlots1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE instance_allocations (
        id uuid PRIMARY KEY,
        reservation_id uuid NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
        host_id integer NOT NULL REFERENCES hosts (id),
        slots integer NOT NULL CHECK (slots > 0),
        -- one slot's size, copied so that usage sums need no join
        vcpus integer NOT NULL CHECK (vcpus > 0),
        memory_mb integer NOT NULL CHECK (memory_mb > 0),
        disk_gb integer NOT NULL CHECK (disk_gb >= 0),
        during tstzrange NOT NULL CHECK (NOT isempty(during)),
        UNIQUE (reservation_id, host_id)
      )`);
    await q.query(
      `CREATE INDEX instance_allocations_host ON instance_allocations USING gist (host_id, during)`,
    );
    await q.query(`
      CREATE TABLE claims (
        id uuid PRIMARY KEY,
        reservation_id uuid NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
        server_id varchar(255) NOT NULL,
        host_id integer NOT NULL REFERENCES hosts (id),
        created_at timestamptz NOT NULL,
        UNIQUE (reservation_id, server_id)
      )`);
    await q.query(`CREATE INDEX claims_host ON claims (reservation_id, host_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE claims`);
    await q.query(`DROP TABLE instance_allocations`);
  }
}
