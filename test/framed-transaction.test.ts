import { Client } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { openDatabase, type Database } from '../src/database/data-source.js';
import { withFramedTransaction } from '../src/database/framed-transaction.js';
import { sql } from '../src/database/sql.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';

jest.setTimeout(30_000);

/**
 * The framed transaction against real PostgreSQL: BEGIN goes with the first prepared
 * statement and COMMIT with the one marked `commit`, so a create is two round trips.
 */
describe('framed transactions', () => {
  let db: TestDatabase;
  let database: Database;
  let ds: DataSource;
  let other: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    database = await openDatabase({ databaseUrl: db.url, dataDir: '' }, 2);
    ds = database.dataSource;
    await ds.query(`CREATE TABLE things (id int PRIMARY KEY, note text)`);
    await ds.query(`INSERT INTO things VALUES (1, 'one'), (2, 'two')`);
    other = await connect(db.url);
  });
  afterAll(async () => {
    await other?.end();
    await database?.close();
    await db?.drop();
  });

  const insert = (tx: EntityManager, id: number, commit = false) =>
    sql(tx, `INSERT INTO things VALUES ($1, 'x')`, [id], { prepare: true, commit });
  const ids = async () =>
    (await other.query(`SELECT id FROM things ORDER BY id`)).rows.map((r) => r.id as number);

  it('should hold the first statement’s locks until the last statement’s COMMIT', async () => {
    let seen: number[] = [];
    await withFramedTransaction(ds, async (tx) => {
      await sql(tx, `SELECT id FROM things WHERE id = $1 FOR UPDATE`, [1], { prepare: true });
      // Another connection cannot take the row now: the transaction is open.
      seen = (await other.query(`SELECT id FROM things FOR UPDATE SKIP LOCKED`)).rows.map(
        (r) => r.id as number,
      );
      const done = await insert(tx, 10, true);
      expect(done.committed).toBe(true);
    });
    expect(seen).toEqual([2]);
    expect(await ids()).toEqual([1, 2, 10]);
    // The lock went with the COMMIT.
    expect((await other.query(`SELECT id FROM things FOR UPDATE SKIP LOCKED`)).rowCount).toBe(3);
  });

  it('should write nothing when the statement that carries the COMMIT fails', async () => {
    await expect(
      withFramedTransaction(ds, async (tx) => {
        await insert(tx, 11);
        await insert(tx, 1, true); // duplicate key: the COMMIT behind it never runs
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await ids()).toEqual([1, 2, 10]);
    // The connection was rolled back and given back clean: the pool's next unit works.
    for (let i = 0; i < 3; i++) await withFramedTransaction(ds, (tx) => insert(tx, 20 + i, true));
    expect(await ids()).toEqual([1, 2, 10, 20, 21, 22]);
  });

  it('should run TypeORM’s own queries inside the transaction, and roll them back with it', async () => {
    await expect(
      withFramedTransaction(ds, async (tx) => {
        await tx.query(`INSERT INTO things VALUES (30, 'typeorm')`);
        await insert(tx, 31);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await ids()).toEqual([1, 2, 10, 20, 21, 22]);
  });

  it('should COMMIT at the end when no statement carried it', async () => {
    await withFramedTransaction(ds, async (tx) => {
      await insert(tx, 40);
      await tx.query(`UPDATE things SET note = 'later' WHERE id = 40`);
    });
    const { rows } = await other.query(`SELECT note FROM things WHERE id = 40`);
    expect(rows).toEqual([{ note: 'later' }]);
  });

  it('should retry the unit on a serialization failure before the COMMIT, not after', async () => {
    let runs = 0;
    await withFramedTransaction(ds, async (tx) => {
      runs++;
      await insert(tx, 50);
      if (runs === 1) {
        await sql(tx, `DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$`);
      }
    });
    expect(runs).toBe(2);
    expect(await ids()).toContain(50);

    runs = 0;
    await expect(
      withFramedTransaction(ds, async (tx) => {
        runs++;
        await insert(tx, 60 + runs, true);
        await sql(tx, `DO $$ BEGIN RAISE EXCEPTION 'late' USING ERRCODE = '40001'; END $$`);
      }),
    ).rejects.toThrow('late');
    // The first attempt's COMMIT had gone out: it is durable, and not run twice.
    expect(runs).toBe(1);
    expect(await ids()).toContain(61);
  });

  it('should fail a statement whose value cannot be sent, and keep the pool usable', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(
        withFramedTransaction(ds, async (tx) => {
          await insert(tx, 70 + i);
          // JSON.stringify throws on a BigInt: found before anything of the frame is written.
          await sql(tx, `SELECT $1::jsonb`, [{ n: BigInt(1) }], { prepare: true, commit: true });
        }),
      ).rejects.toThrow(/BigInt/);
    }
    expect(await ids()).not.toContain(70);
    await withFramedTransaction(ds, (tx) => insert(tx, 73, true));
    expect(await ids()).toContain(73);
  });

  it('should keep a nested TypeORM transaction and a concurrent first query inside the unit', async () => {
    await expect(
      withFramedTransaction(ds, async (tx) => {
        await Promise.all([tx.query(`INSERT INTO things VALUES (80, 'typeorm')`), insert(tx, 81)]);
        await tx.transaction((inner) => inner.query(`INSERT INTO things VALUES (82, 'nested')`));
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    const left = await ids();
    expect(left.filter((id) => id >= 80 && id < 90)).toEqual([]);
  });

  it('should keep a connection usable after a framed statement fails to parse', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(
        withFramedTransaction(ds, (tx) => sql(tx, `SELEC 1`, [], { prepare: true, commit: true })),
      ).rejects.toThrow(/syntax error/);
    }
    // Every pooled connection still runs prepared statements, named ones re-used.
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() =>
        withFramedTransaction(ds, (tx) =>
          sql<{ n: number }>(tx, `SELECT $1::int + 1 AS n`, [1], { prepare: true, commit: true }),
        ),
      ),
    );
    expect(runs.map((r) => r.rows)).toEqual([[{ n: 2 }], [{ n: 2 }], [{ n: 2 }], [{ n: 2 }]]);
  });
});
