import { migrate, openDatabase } from '../src/database/data-source.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';

describe('invariants PostgreSQL enforces', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    const database = await openDatabase({ databaseUrl: db.url, dataDir: '' }, 1);
    await migrate(database.dataSource);
    await database.close();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('should enforce the invariants in the database whatever the application does', async () => {
    const client = await connect(db.url);
    const lease = `INSERT INTO leases (id, name, project_id, user_id, start_at, end_at, status, created_at)
                   VALUES ($1, 'x', 'p', 'u', $2, $3, 'PENDING', now())`;
    const id = '00000000-0000-4000-8000-000000000001';
    try {
      await expect(client.query(lease, [id, '2040-01-02', '2040-01-01'])).rejects.toThrow(
        /leases_window/,
      );
      await client.query(lease, [id, '2040-01-01', '2040-01-02']);
      const event = `INSERT INTO events (id, lease_id, event_type, time, status, claim_expires_at, created_at)
                     VALUES (gen_random_uuid(), $1, $2, now(), $3, $4, now())`;
      await expect(client.query(event, [id, 'start_lease', 'IN_PROGRESS', null])).rejects.toThrow(
        /events_claim/,
      );
      await client.query(event, [id, 'start_lease', 'IN_PROGRESS', new Date()]);
      await expect(
        client.query(event, [id, 'end_lease', 'IN_PROGRESS', new Date()]),
      ).rejects.toThrow(/events_one_running/);
      await client.query(`INSERT INTO hosts (hypervisor_hostname, service_name, vcpus, memory_mb, local_gb, hypervisor_type,
                            hypervisor_version, cpu_info, availability_zone, created_at)
                          VALUES ('inv-1', 'inv-1', 1, 1, 1, 't', 1, '', 'nova', now())`);
      const r = `INSERT INTO reservations (id, lease_id, resource_type, status, created_at) VALUES ($1, $2, 'physical:host', 'pending', now())`;
      await client.query(r, ['00000000-0000-4000-8000-000000000002', id]);
      await client.query(r, ['00000000-0000-4000-8000-000000000003', id]);
      const alloc = `INSERT INTO host_allocations (id, reservation_id, host_id, during)
                     SELECT gen_random_uuid(), $1, id, tstzrange($2, $3, '[)') FROM hosts WHERE hypervisor_hostname = 'inv-1'`;
      await client.query(alloc, [
        '00000000-0000-4000-8000-000000000002',
        '2040-01-01 00:00Z',
        '2040-01-01 12:00Z',
      ]);
      await expect(
        client.query(alloc, [
          '00000000-0000-4000-8000-000000000003',
          '2040-01-01 11:00Z',
          '2040-01-01 13:00Z',
        ]),
      ).rejects.toThrow(/host_allocations_no_overlap/);
      // touching windows are fine
      await client.query(alloc, [
        '00000000-0000-4000-8000-000000000003',
        '2040-01-01 12:00Z',
        '2040-01-01 13:00Z',
      ]);
      await client.query(`DELETE FROM leases WHERE id = $1`, [id]);
      const left = await client.query(
        `SELECT (SELECT count(*) FROM events)::int AS e, (SELECT count(*) FROM host_allocations)::int AS a`,
      );
      expect(left.rows[0]).toEqual({ e: 0, a: 0 });
    } finally {
      await client.end();
    }
  });
});
