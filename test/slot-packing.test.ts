import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';
import { rolledBack } from '../src/enforcement/rolled-back.js';
import { pickSlots } from '../src/plugins/virtual-instance/pick-slots.js';
import { SlotsRepository } from '../src/plugins/virtual-instance/slots.repository.js';
import { HostQueryBuilder } from '../src/requirements/host-query.js';

jest.setTimeout(300_000);

const HOUR = 3_600_000;
const T0 = Date.parse('2031-01-01T00:00:00Z');

/**
 * A create places slots in one statement (SlotsRepository.placeNew, SQL); an update
 * packs them with pickSlots (TypeScript) over `capacity`. On random hosts and slots
 * both must choose the same hosts and counts.
 */
describe('slot packing in SQL', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let hostIds: number[];

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'virtual:instance' } });
    await addHosts(
      t.http,
      Array.from({ length: 8 }, (_, i) => `pack-${i}`),
      (_, i) => ({ vcpus: [4, 8, 16][i % 3], memory_mb: [8192, 16384][i % 2], local_gb: 100 }),
    );
    client = await connect(db.url);
    // Slots written straight in, for reservations that need no rows of their own.
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

  const slot = fc.record({
    host: fc.nat(7),
    slots: fc.integer({ min: 1, max: 4 }),
    vcpus: fc.constantFrom(1, 2, 4),
    memoryMb: fc.constantFrom(1024, 2048, 4096),
    fromHour: fc.integer({ min: 0, max: 20 }),
    hours: fc.integer({ min: 1, max: 12 }),
  });
  const request = fc.record({
    amount: fc.integer({ min: 1, max: 12 }),
    affinity: fc.constantFrom(true, false, null),
    vcpus: fc.constantFrom(1, 2, 4, 8),
    memory_mb: fc.constantFrom(1024, 4096, 8192),
    disk_gb: fc.constantFrom(0, 10),
    fromHour: fc.integer({ min: 0, max: 16 }),
    hours: fc.integer({ min: 1, max: 8 }),
  });

  it('should place a new reservation as pickSlots does over capacity', async () => {
    const slots = t.app.get(SlotsRepository);
    const ds = t.app.get(DataSource);
    const q = await t.app.get(HostQueryBuilder).build(ds.manager, null);
    let placed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(slot, { maxLength: 14 }), request, async (existing, r) => {
        await client.query(`DELETE FROM instance_allocations`);
        for (const s of existing) {
          const start = new Date(T0 + s.fromHour * HOUR);
          await client.query(
            `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
             VALUES ($1, $2, $3, $4, $5, $6, 1, tstzrange($7, $8, '[)'))`,
            [
              randomUUID(),
              randomUUID(),
              hostIds[s.host],
              s.slots,
              s.vcpus,
              s.memoryMb,
              start,
              new Date(start.getTime() + s.hours * HOUR),
            ],
          );
        }
        const during = {
          start: new Date(T0 + r.fromHour * HOUR),
          end: new Date(T0 + (r.fromHour + r.hours) * HOUR),
        };
        const id = randomUUID();
        const hosts = await slots.capacity(ds.manager, q, during, r, {
          ownReservation: id,
          need: { amount: r.amount, oneHost: r.affinity === true },
        });
        const expected = pickSlots(hosts, r.amount, r.affinity);
        const actual = await rolledBack(ds, (tx) => slots.placeNew(tx, q, during, r, id));
        const sorted = (p: Map<number, number> | null) =>
          p === null ? null : [...p].sort(([a], [b]) => a - b);
        expect(sorted(actual)).toEqual(sorted(expected));
        if (expected !== null) placed++;
      }),
      { seed: 11, numRuns: 80 },
    );
    // The random cases are not all refusals.
    expect(placed).toBeGreaterThan(20);
  });
});
