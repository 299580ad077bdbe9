import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { migrate, openDatabase } from '../src/database/data-source.js';
import { ManagerService } from '../src/events/manager.service.js';
import { MIGRATIONS } from '../src/database/entities.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';

jest.setTimeout(60_000);

describe('the embedded database (DATABASE_URL unset)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'climate-pglite-'));
  const clock = new FakeClock(new Date('2039-01-01T00:00:00Z'));
  const config = { ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'error' }), managerTimer: false };

  it('should serve the API, run the manager and keep data across restarts', async () => {
    let app = await buildApp(config, { clock, logger: false });
    await app.init();
    let http = request(app.getHttpServer());
    await http.post('/v1/os-hosts').send({ name: 'embedded-1', vcpus: 4 }).expect(201);
    const created = await http
      .post('/v1/leases')
      .send({
        name: 'kept',
        start_date: '2039-01-01 01:00',
        end_date: '2039-01-02 00:00',
        reservations: [
          {
            resource_type: 'physical:host',
            min: 1,
            max: 1,
            hypervisor_properties: '',
            resource_properties: '',
          },
        ],
      })
      .expect(201);
    // a failed create rolls back on PGlite too
    await http
      .post('/v1/leases')
      .send({
        name: 'x',
        start_date: '2039-01-01 01:00',
        end_date: '2039-01-02 00:00',
        reservations: [{ resource_type: 'physical:host', min: 1, max: 1 }],
      })
      .expect(409);
    clock.advance(2 * 3600_000);
    const manager = app.get(ManagerService);
    await manager.tick();
    await manager.drain();
    expect((await http.get(`/v1/leases/${created.body.lease.id}`)).body.lease.status).toBe(
      'ACTIVE',
    );
    await app.close();

    app = await buildApp(config, { clock, logger: false });
    await app.init();
    http = request(app.getHttpServer());
    const leases = (await http.get('/v1/leases').expect(200)).body.leases as {
      name: string;
      status: string;
    }[];
    expect(leases.map((l) => [l.name, l.status])).toEqual([['kept', 'ACTIVE']]);
    await app.close();
  });
});

describe('migrations on PostgreSQL', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('should run each migration once when three replicas start together', async () => {
    const replicas = await Promise.all(
      [1, 2, 3].map(() => openDatabase({ databaseUrl: db.url, dataDir: '' }, 2)),
    );
    try {
      const ran = await Promise.all(replicas.map((r) => migrate(r.dataSource)));
      expect(ran.flat().sort()).toEqual(MIGRATIONS.map((m) => m.name).sort());
      expect(await migrate(replicas[0].dataSource)).toEqual([]);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
    const client = await connect(db.url);
    try {
      const ext = await client.query(`SELECT 1 FROM pg_extension WHERE extname = 'btree_gist'`);
      expect(ext.rowCount).toBe(1);
      const done = await client.query(
        `SELECT name, count(*)::int AS n FROM migrations GROUP BY name`,
      );
      expect(done.rows.every((r) => r.n === 1)).toBe(true);
    } finally {
      await client.end();
    }
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

  it('should undo every migration with its down step', async () => {
    const database = await openDatabase({ databaseUrl: db.url, dataDir: '' }, 1);
    try {
      for (let i = 0; i < MIGRATIONS.length; i++) await database.dataSource.undoLastMigration();
    } finally {
      await database.close();
    }
    const client = await connect(db.url);
    const tables = await client.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
    );
    await client.end();
    expect(tables.rows.map((r) => r.tablename)).toEqual(['migrations']);
  });
});
