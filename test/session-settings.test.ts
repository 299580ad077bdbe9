/**
 * What every Climate connection to PostgreSQL is set to (src/database/data-source.ts): the
 * statement and idle-in-transaction bounds, and no JIT compilation.
 */
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

describe('the settings of Climate sessions', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { DATABASE_QUERY_TIMEOUT_MS: '7000' } });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should bound statements and idle transactions and turn JIT off on every connection', async () => {
    const ds = t.app.get(DataSource);
    // Several at once, so more than one pooled connection answers.
    const rows = await Promise.all(
      Array.from({ length: 4 }, () =>
        ds.query<{ jit: string; timeout: string; idle: string }[]>(
          `SELECT current_setting('jit') AS jit, current_setting('statement_timeout') AS timeout,
                  current_setting('idle_in_transaction_session_timeout') AS idle, pg_sleep(0.05)`,
        ),
      ),
    );
    for (const [row] of rows) {
      expect(row).toMatchObject({ jit: 'off', timeout: '7s', idle: '15min' });
    }
  });
});
