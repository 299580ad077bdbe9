import { runMigrationCommand } from '../src/database/migrations-cli.js';
import { MIGRATIONS } from '../src/database/migration-list.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';

const NAMES = MIGRATIONS.map((m) => new m().name);

describe('the migrations command (show, run, revert)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function run(command: 'show' | 'run' | 'revert'): Promise<string[]> {
    const lines: string[] = [];
    await runMigrationCommand(command, { DATABASE_URL: db.url }, (l) => lines.push(l));
    return lines;
  }

  async function applied(): Promise<string[]> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query<{ name: string }>(
        'SELECT name FROM migrations ORDER BY id',
      );
      return rows.map((r) => r.name);
    } finally {
      await client.end();
    }
  }

  it('should apply, list, revert the newest and re-apply it, as an upgrade and a rollback do', async () => {
    expect(await run('show')).toEqual(NAMES.map((n) => `[ ] ${n}`));
    expect(await run('run')).toEqual([`applied ${NAMES.join(', ')}`]);
    expect(await applied()).toEqual(NAMES);
    expect(await run('run')).toEqual(['nothing to apply']);

    const newest = NAMES[NAMES.length - 1];
    expect(await run('revert')).toEqual([`reverted ${newest}`]);
    expect(await applied()).toEqual(NAMES.slice(0, -1));
    expect((await run('show')).slice(-2)).toEqual([
      `[X] ${NAMES[NAMES.length - 2]}`,
      `[ ] ${newest}`,
    ]);

    expect(await run('run')).toEqual([`applied ${newest}`]);
    expect(await applied()).toEqual(NAMES);
  });
});
