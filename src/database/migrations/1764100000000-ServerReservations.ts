import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The scheduler filter looks up, for every boot, whether the server holds a
 * reservation of its own (the Climate flow): by its id, so indexed.
 */
export class ServerReservations1764100000000 implements MigrationInterface {
  name = 'ServerReservations1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX reservations_server ON reservations ((params ->> 'server_id'))
        WHERE params ->> 'server_id' IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX reservations_server`);
  }
}
