import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { ManagerService } from '../src/events/manager.service.js';
import { ManagerPulse } from '../src/observability/manager-pulse.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { MemoryDriver } from './support/memory-driver.js';
import { waitFor } from './support/seed.js';

jest.setTimeout(30_000);

type Mode = 'ok' | 'fail' | 'hang';

/** Keystone, Nova and Placement as far as readiness sees them: a status, or no answer. */
class FakeOpenStack {
  readonly modes = new Map<string, Mode>();
  private server: Server | null = null;
  port = 0;

  async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      const service = (req.url ?? '/').split('/')[1];
      const mode = this.modes.get(service) ?? 'ok';
      if (mode === 'hang') return;
      // Nova's root wants a token: a 401 still says Nova answers.
      res.writeHead(mode === 'fail' ? 503 : service === 'nova' ? 401 : 200).end('{}');
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  url(service: string): string {
    return `http://127.0.0.1:${this.port}/${service}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

describe('liveness and readiness (ROLE=all, Keystone and the nova driver configured)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let http: TestAgent;
  const openstack = new FakeOpenStack();

  beforeAll(async () => {
    db = await createTestDatabase();
    await openstack.listen();
    const config = loadConfig({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'error',
      KEYSTONE_URL: openstack.url('keystone'),
      KEYSTONE_TIMEOUT_MS: '300',
      SERVICE_PASSWORD: 'x',
      COMPUTE_DRIVER: 'nova',
      NOVA_URL: openstack.url('nova'),
      PLACEMENT_URL: openstack.url('placement'),
      // The timer runs (readiness judges its polls) but never fires during the test.
      EVENT_POLL_MS: '3600000',
      HEAL_INTERVAL_MS: '3600000',
    });
    // Readiness asks Nova itself; the app's compute calls go to an in-memory double.
    app = await buildApp(config, {
      clock: new FakeClock(new Date()),
      driver: new MemoryDriver(),
      logger: false,
    });
    await app.init();
    http = request(app.getHttpServer());
  });
  afterAll(async () => {
    await app?.close();
    await openstack.close();
    await db?.drop();
  });

  const ready = () => http.get('/readyz');

  it('should not be ready before the manager has polled, and ready once it has', async () => {
    const before = await ready().expect(503);
    expect(before.body).toMatchObject({
      status: 'error',
      error: {
        manager: { status: 'down', message: expect.stringMatching(/no poll has finished/) },
      },
    });
    await app.get(ManagerService).tick();
    const after = await ready().expect(200);
    expect(after.body).toMatchObject({ status: 'ok' });
    expect(Object.keys(after.body.info).sort()).toEqual(
      ['database', 'keystone', 'manager', 'nova', 'placement'].sort(),
    );
    expect(after.headers['cache-control']).toBe('no-store');
  });

  it('should not be ready while the last poll failed, and stay alive', async () => {
    app.get(ManagerPulse).polled(new Error('could not claim'));
    const res = await ready().expect(503);
    expect(res.body.error.manager).toMatchObject({
      status: 'down',
      message: 'the last poll failed: could not claim',
    });
    expect(res.body.info.database).toMatchObject({ status: 'up' });
    await http.get('/healthz').expect(200);
    await app.get(ManagerService).tick();
    await ready().expect(200);
  });

  it('should be down, saying no more than the failure, when Nova answers 5xx or not at all', async () => {
    openstack.modes.set('nova', 'fail');
    const failing = await ready().expect(503);
    expect(failing.body.error).toEqual({
      nova: { status: 'down', message: 'answered 503', responseTime: expect.any(Number) },
    });

    openstack.modes.set('nova', 'hang');
    const started = Date.now();
    const hanging = await ready().expect(503);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(hanging.body.error.nova).toMatchObject({ status: 'down', message: 'no answer in time' });
    expect(JSON.stringify(hanging.body)).not.toContain('127.0.0.1');

    openstack.modes.set('nova', 'ok');
    openstack.modes.set('keystone', 'fail');
    expect((await ready().expect(503)).body.error.keystone).toMatchObject({ status: 'down' });
    openstack.modes.set('keystone', 'ok');
    await ready().expect(200);
  });

  it('should not be ready to claim events on a read-only database', async () => {
    const admin = await connect(db.url);
    const reconnect = () =>
      admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
    try {
      await admin.query(`ALTER DATABASE ${db.name} SET default_transaction_read_only = on`);
      await reconnect();
      const res = await waitFor('readiness to see the read-only database', async () => {
        const r = await ready();
        return /read-only/.test(String(r.body.error?.manager?.message)) ? r : undefined;
      });
      expect(res.status).toBe(503);
      expect(res.body.info.database).toMatchObject({ status: 'up' });
      await http.get('/healthz').expect(200);
    } finally {
      await admin.query(`ALTER DATABASE ${db.name} RESET default_transaction_read_only`);
      await reconnect();
      await admin.end();
    }
    await waitFor('readiness to come back', async () =>
      (await ready()).status === 200 ? true : undefined,
    );
  });

  it('should answer probes whatever OpenStack-API-Version or query they carry', async () => {
    await http
      .get('/healthz?verbose=1')
      .set('OpenStack-API-Version', 'reservation 9.9')
      .expect(200);
    await http.get('/readyz').set('OpenStack-API-Version', 'reservation x').expect(200);
  });
});
