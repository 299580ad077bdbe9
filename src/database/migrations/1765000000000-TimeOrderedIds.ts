import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * uuid7(): a version 7 uuid (RFC 9562) made in the database, for rows that statements
 * insert many at a time (allocations, claims); the Node twin is `newId()`. A random
 * (version 4) id puts every insert on a random leaf of each index keyed by it: at 100,000
 * hosts (a million allocations) that was 3 to 8 full-page writes and 2.5 to 6 block reads
 * per lease create. A time-ordered id keeps inserts on the last pages.
 *
 * gen_random_uuid() supplies the random bits and the variant; the first 48 bits become the
 * Unix time in milliseconds and the version nibble goes from 4 (0100) to 7 (0111) by
 * setting bits 52 and 53 (the low bits of byte 6's high nibble).
 */
export class TimeOrderedIds1765000000000 implements MigrationInterface {
  name = 'TimeOrderedIds1765000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE FUNCTION uuid7() RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
         SELECT encode(
           set_bit(set_bit(
             overlay(uuid_send(gen_random_uuid())
                     PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                     FROM 1 FOR 6),
             52, 1), 53, 1),
           'hex')::uuid
       $$`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION uuid7()`);
  }
}
