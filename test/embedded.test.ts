import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { DataSource } from 'typeorm';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { JsonLogger } from '../src/common/json-logger.js';
import { loadConfig, type Config } from '../src/config/config.js';
import { migrate } from '../src/database/data-source.js';
import { MIGRATIONS } from '../src/database/migration-list.js';
import { ManagerService } from '../src/events/manager.service.js';

const HOUR = 3_600_000;

// PGlite takes a few seconds to start; this file starts it twice.
jest.setTimeout(180_000);

interface Allocation {
  resource_id: string;
  reservations: { id: string; lease_id: string }[];
}

describe('the embedded PGlite database (DATABASE_URL unset)', () => {
  let dataDir: string;
  let config: Config;
  const clock = new FakeClock(new Date('2041-06-01T00:00:00Z'));
  let app: INestApplication | undefined;
  let http: TestAgent;

  const host = (min = 1) => ({
    resource_type: 'physical:host',
    min,
    max: min,
    hypervisor_properties: '',
    resource_properties: '',
  });

  /** What the app logged, one message per line. */
  let logged: string[] = [];

  async function boot(dir = dataDir): Promise<void> {
    logged = [];
    const logger = new JsonLogger('info', (line) => logged.push(JSON.parse(line).msg));
    app = await buildApp({ ...config, dataDir: dir }, { clock, plugins: [], logger });
    await app.init();
    http = request(app.getHttpServer());
  }
  async function shutdown(): Promise<void> {
    await app?.close();
    app = undefined;
  }
  async function settle(): Promise<void> {
    const manager = (app as INestApplication).get(ManagerService);
    for (let i = 0; i < 20; i++) {
      const claimed = await manager.tick();
      await manager.drain();
      if (claimed === 0) return;
    }
    throw new Error('manager did not settle');
  }
  async function leaseCount(): Promise<number> {
    return ((await http.get('/v1/leases').expect(200)).body.leases as unknown[]).length;
  }
  async function allocations(leaseId: string): Promise<Allocation[]> {
    const res = await http.get(`/v1/os-hosts/allocations?lease_id=${leaseId}`).expect(200);
    return (res.body.allocations as Allocation[]).filter((a) => a.reservations.length > 0);
  }
  async function migrationRows(): Promise<{ id: number; timestamp: string; name: string }[]> {
    const dataSource = (app as INestApplication).get(DataSource);
    return dataSource.query(`SELECT id, timestamp::text, name FROM migrations ORDER BY id`);
  }

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'climate-embedded-'));
    config = { ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'error' }), managerTimer: false };
  });
  afterAll(async () => {
    await shutdown();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('should keep leases, their state and the migration history when restarted on the same directory', async () => {
    expect(config.databaseUrl).toBeNull();
    await boot();
    expect(readdirSync(dataDir).length).toBeGreaterThan(0);
    // The long first start says what it does before doing it.
    expect(logged.slice(0, 2)).toEqual([
      `creating the embedded database in ${dataDir}: the first start takes ten to twenty seconds`,
      `applying ${MIGRATIONS.length} database migration(s)`,
    ]);
    const before = await migrationRows();
    expect(before.map((m) => m.name)).toEqual(MIGRATIONS.map((m) => new m().name));

    const h1 = await http.post('/v1/os-hosts').send({ name: 'pg-1', vcpus: 4 }).expect(201);
    const created = await http
      .post('/v1/leases')
      .send({
        name: 'kept',
        start_date: '2041-06-01 01:00',
        end_date: '2041-06-01 05:00',
        reservations: [host()],
      })
      .expect(201);
    const id = created.body.lease.id as string;
    expect(created.body.lease.status).toBe('PENDING');

    clock.advance(2 * HOUR);
    await settle();
    const active = (await http.get(`/v1/leases/${id}`).expect(200)).body.lease;
    expect(active.status).toBe('ACTIVE');
    expect(active.reservations[0].status).toBe('active');
    expect((await allocations(id)).map((a) => a.resource_id)).toEqual([h1.body.host.id]);
    // the capacity plan's SQL (range_agg, window sums) runs on PGlite too
    const plan = await http
      .get('/v1/os-hosts/capacity?start=2041-06-01%2000:00&end=2041-06-02%2000:00&step=4h')
      .expect(200);
    expect(plan.body.capacity.map((c: { reserved: number }) => c.reserved)).toEqual([
      1, 1, 0, 0, 0, 0,
    ]);
    await shutdown();

    await boot();
    expect(logged.filter((m) => /creating|migration/.test(m))).toEqual([]);
    // buildApp ran migrate() on start-up; nothing was pending and nothing was redone.
    expect(await migrate((app as INestApplication).get(DataSource))).toEqual([]);
    expect(await migrationRows()).toEqual(before);
    const leases = (await http.get('/v1/leases').expect(200)).body.leases;
    expect(leases).toHaveLength(1);
    expect(leases[0]).toEqual(active);
    expect((await allocations(id)).map((a) => a.resource_id)).toEqual([h1.body.host.id]);

    // The events survived too: the restarted manager ends the lease on time.
    clock.advance(4 * HOUR);
    await settle();
    const ended = (await http.get(`/v1/leases/${id}`).expect(200)).body.lease;
    expect(ended.status).toBe('TERMINATED');
    expect(ended.events.map((e: { status: string }) => e.status)).toEqual(['DONE', 'DONE', 'DONE']);

    // The operations guide's backup: a copy of the stopped process's directory starts
    // with everything in it.
    await shutdown();
    const copy = mkdtempSync(join(tmpdir(), 'climate-embedded-copy-'));
    try {
      cpSync(dataDir, copy, { recursive: true });
      await boot(copy);
      expect((await http.get(`/v1/leases/${id}`).expect(200)).body.lease).toEqual(ended);
      await shutdown();
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('should leave nothing behind when a create fails on PGlite', async () => {
    if (app === undefined) await boot();
    clock.set(new Date('2041-07-01T00:00:00Z'));
    const window = { start_date: '2041-07-01 01:00', end_date: '2041-07-01 03:00' };
    const count = await leaseCount();

    // Rejected while validating, before the transaction.
    const unsupported = await http
      .post('/v1/leases')
      .send({ name: 'bad-type', ...window, reservations: [{ resource_type: 'foo:bar' }] })
      .expect(400);
    expect(unsupported.body.error_message).toBe('The foo:bar resource type is not supported');
    expect(await leaseCount()).toBe(count);

    await http.post('/v1/os-hosts').send({ name: 'pg-2', vcpus: 4 }).expect(201);
    await http.post('/v1/os-hosts').send({ name: 'pg-3', vcpus: 4 }).expect(201);
    const all = ((await http.get('/v1/os-hosts').expect(200)).body.hosts as { id: string }[])
      .map((h) => h.id)
      .sort();
    // Every host is free in this window. The first reservation takes them all, the second
    // fails inside the transaction after the lease row, a reservation and its allocations
    // were written: all of it must roll back.
    const tooMany = await http
      .post('/v1/leases')
      .send({ name: 'half', ...window, reservations: [host(all.length), host(1)] })
      .expect(409);
    expect(tooMany.body.error_message).toContain('Not enough hosts available');
    expect(await leaseCount()).toBe(count);
    const names = (await http.get('/v1/leases')).body.leases.map((l: { name: string }) => l.name);
    expect(names).not.toContain('half');

    // Had the first reservation's allocations survived, no host would be free now.
    const after = await http
      .post('/v1/leases')
      .send({ name: 'whole', ...window, reservations: [host(all.length)] })
      .expect(201);
    expect(
      (await allocations(after.body.lease.id as string)).map((a) => a.resource_id).sort(),
    ).toEqual(all);
    expect(await leaseCount()).toBe(count + 1);
  });
  it('should reserve floating IPs on PGlite, with its exclusion constraint refusing an overlap', async () => {
    if (app === undefined) await boot();
    clock.set(new Date('2041-08-01T00:00:00Z'));
    for (const address of ['192.0.2.10', '192.0.2.11']) {
      await http
        .post('/v1/floatingips')
        .send({ floating_network_id: 'pg-net', floating_ip_address: address })
        .expect(201);
    }
    const fips = (amount: number) => ({
      start_date: '2041-08-01 01:00',
      end_date: '2041-08-01 03:00',
      reservations: [{ resource_type: 'virtual:floatingip', network_id: 'pg-net', amount }],
    });
    const made = await http
      .post('/v1/leases')
      .send({ name: 'pg-fips', ...fips(2) })
      .expect(201);
    expect(made.body.lease.reservations[0].floatingips).toEqual(['192.0.2.10', '192.0.2.11']);
    const more = await http
      .post('/v1/leases')
      .send({ name: 'pg-more', ...fips(1) })
      .expect(409);
    expect(more.body.error_type).toBe('NotEnoughFloatingIPAvailable');
    const dataSource = (app as INestApplication).get(DataSource);
    await expect(
      dataSource.query(
        `INSERT INTO floatingip_allocations (id, reservation_id, floatingip_id, during)
         SELECT uuid7(), reservation_id, floatingip_id, during FROM floatingip_allocations LIMIT 1`,
      ),
    ).rejects.toThrow(/floatingip_allocations_no_overlap/);
    clock.set(new Date('2041-08-01T01:00:00Z'));
    await settle();
    const shown = await http.get(`/v1/leases/${made.body.lease.id}`).expect(200);
    expect(shown.body.lease.status).toBe('ACTIVE');
  });
});
