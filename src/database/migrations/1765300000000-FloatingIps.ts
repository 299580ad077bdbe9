import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `virtual:floatingip`: the addresses an operator registers for reservation, and their
 * allocations over time. As for hosts, the exclusion constraint makes double booking
 * impossible whatever the application does; an address with allocations cannot be
 * deleted (RESTRICT).
 */
export class FloatingIps1765300000000 implements MigrationInterface {
  name = 'FloatingIps1765300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE floatingips (
        id uuid PRIMARY KEY,
        floating_network_id varchar(255) NOT NULL,
        subnet_id varchar(255),
        floating_ip_address inet NOT NULL,
        reservable boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz,
        CONSTRAINT floatingips_address UNIQUE (floating_network_id, floating_ip_address)
      )`);
    await q.query(`
      CREATE TABLE floatingip_allocations (
        id uuid PRIMARY KEY,
        reservation_id uuid NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
        floatingip_id uuid NOT NULL REFERENCES floatingips (id) ON DELETE RESTRICT,
        during tstzrange NOT NULL CHECK (NOT isempty(during)),
        CONSTRAINT floatingip_allocations_no_overlap
          EXCLUDE USING gist (floatingip_id WITH =, during WITH &&)
      )`);
    await q.query(
      `CREATE INDEX floatingip_allocations_reservation ON floatingip_allocations (reservation_id)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE floatingip_allocations`);
    await q.query(`DROP TABLE floatingips`);
  }
}
