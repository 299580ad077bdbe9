import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';
import { sql, SqlParams } from '../src/database/sql.js';
import { hostsWithSlots, slotHostsSql } from '../src/pools/host-usage.js';
import { PowerReadiness } from '../src/pools/power-readiness.js';

jest.setTimeout(300_000);

const HOUR = 3_600_000;
const T0 = Date.parse('2031-01-01T00:00:00Z');
const HOSTS = 6;

const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

/**
 * A fragment the create's statement embeds and its statement twin, run apart, answer the
 * same on the same rows (docs/development.md, "Who owns each table").
 */
describe('fragments and their statement twins', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let hostIds: number[];

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'virtual:instance' } });
    await addHosts(
      t.http,
      Array.from({ length: HOSTS }, (_, i) => `twin-${i}`),
      () => ({ vcpus: 8, memory_mb: 8192, local_gb: 100 }),
    );
    client = await connect(db.url);
    // Rows written straight in, for reservations and hosts that need no others.
    await client.query(`SET session_replication_role = replica`);
    hostIds = (await client.query<{ id: number }>(`SELECT id FROM hosts ORDER BY id`)).rows.map(
      (r) => r.id,
    );
  });
  afterAll(async () => {
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  const window = fc.record({ fromHour: fc.integer({ min: 0, max: 20 }), hours: fc.nat(10) });
  const asked = fc.subarray(Array.from({ length: HOSTS }, (_, i) => i));

  it('should find the same hosts with slots with slotHostsSql as with hostsWithSlots', async () => {
    const em = t.app.get(DataSource).manager;
    let found = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ host: fc.nat(HOSTS - 1), w: window }), { maxLength: 10 }),
        asked,
        window,
        async (slots, picked, w) => {
          await client.query(`DELETE FROM instance_allocations`);
          for (const s of slots) {
            const start = T0 + s.w.fromHour * HOUR;
            await client.query(
              `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
               VALUES ($1, $2, $3, 1, 1, 512, 1, tstzrange($4, $5, '[)'))`,
              [
                randomUUID(),
                randomUUID(),
                hostIds[s.host],
                new Date(start),
                new Date(start + (s.w.hours + 1) * HOUR),
              ],
            );
          }
          const ids = picked.map((i) => hostIds[i]);
          const start = T0 + w.fromHour * HOUR;
          const during = { start: new Date(start), end: new Date(start + (w.hours + 1) * HOUR) };
          const statement = await hostsWithSlots(em, ids, during);
          const p = new SqlParams();
          const range = `tstzrange(${p.bind(during.start)}::timestamptz, ${p.bind(during.end)}::timestamptz, '[)')`;
          const fragment = slotHostsSql(`${p.bind(ids)}::int[]`, range);
          const { rows } = await sql<{ host_id: number }>(
            em,
            `SELECT DISTINCT host_id FROM (${fragment}) x`,
            p.values,
          );
          expect(sorted(rows.map((r) => r.host_id))).toEqual(sorted(statement));
          found += statement.length;
        },
      ),
      { seed: 24, numRuns: 60 },
    );
    // The random cases are not all empty.
    expect(found).toBeGreaterThan(20);
  });

  it('should find the same late hosts with notReadySql as with notReady', async () => {
    const em = t.app.get(DataSource).manager;
    const readiness = t.app.get(PowerReadiness);
    const now = t.clock.now().getTime();
    const power = fc.record({
      state: fc.constantFrom('on', 'off', 'booting', 'stopping'),
      minutes: fc.integer({ min: -30, max: 120 }),
    });
    let late = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(power, { minLength: HOSTS, maxLength: HOSTS }),
        asked,
        fc.integer({ min: 0, max: 240 }),
        async (states, picked, startMinutes) => {
          await client.query(`DELETE FROM host_power`);
          for (const [i, s] of states.entries()) {
            const moving = s.state === 'booting' || s.state === 'stopping';
            await client.query(
              `INSERT INTO host_power (host_id, state, deadline, changed_at) VALUES ($1, $2, $3, $4)`,
              [
                hostIds[i],
                s.state,
                moving ? new Date(now + s.minutes * 60_000) : null,
                new Date(now),
              ],
            );
          }
          const ids = picked.map((i) => hostIds[i]);
          const start = new Date(now + startMinutes * 60_000);
          const statement = await readiness.notReady(em, ids, start);
          const p = new SqlParams();
          const fragment = readiness.notReadySql(p, `${p.bind(ids)}::int[]`, start);
          const { rows } = await sql<{ host_id: number }>(em, fragment, p.values);
          expect(sorted(rows.map((r) => r.host_id))).toEqual(sorted(statement));
          late += statement.length;
        },
      ),
      { seed: 24, numRuns: 60 },
    );
    // Some hosts are late: the comparison is not of empty answers only.
    expect(late).toBeGreaterThan(5);
  });
});
