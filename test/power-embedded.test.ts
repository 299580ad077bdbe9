import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { ManagerService } from '../src/events/manager.service.js';
import { PowerService } from '../src/power/power.service.js';
import { hostReservation } from './support/hosts.js';

const MINUTE = 60_000;

// PGlite takes a few seconds to start.
jest.setTimeout(90_000);

describe('the power plan on the embedded database (PGlite)', () => {
  let dataDir: string;
  let app: INestApplication | undefined;
  let http: TestAgent;
  const clock = new FakeClock(new Date('2042-01-01T00:00:00Z'));

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'climate-power-'));
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'error',
      PLUGINS: 'physical:host',
      POWER_PLAN: 'on',
      POWER_OFF_IDLE_MINUTES: '30',
      POWER_BOOT_SECONDS: '300',
      BUILTIN_BOOT_SECONDS: '60',
      PROVISIONING_LEAD_MINUTES: '10',
    });
    app = await buildApp({ ...config, managerTimer: false }, { clock, plugins: [], logger: false });
    await app.init();
    http = request(app.getHttpServer());
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function minutes(n: number): Promise<void> {
    const manager = (app as INestApplication).get(ManagerService);
    for (let i = 0; i < n; i++) {
      clock.advance(MINUTE);
      await (app as INestApplication).get(PowerService).run();
      while ((await manager.tick()) > 0) await manager.drain();
      await manager.drain();
    }
  }

  const states = async () =>
    ((await http.get('/v1/power-plan').expect(200)).body.hosts as { power_state: string }[]).map(
      (h) => h.power_state,
    );

  it('should power an idle host off, back on before its lease and start the lease on it', async () => {
    await http.post('/v1/os-hosts').send({ name: 'emb-1', vcpus: 4 }).expect(201);
    await minutes(31);
    expect(await states()).toEqual(['off']);
    const start = new Date(clock.now().getTime() + 60 * MINUTE);
    const created = await http
      .post('/v1/leases')
      .send({
        name: 'embedded',
        start_date: start.toISOString(),
        end_date: new Date(start.getTime() + 60 * MINUTE).toISOString(),
        reservations: [hostReservation()],
      })
      .expect(201);
    await minutes(44);
    expect(await states()).toEqual(['off']);
    await minutes(2);
    expect(await states()).toEqual(['on']);
    await minutes(14);
    const lease = (await http.get(`/v1/leases/${created.body.lease.id}`).expect(200)).body.lease;
    expect(lease.status).toBe('ACTIVE');
    const plan = (await http.get('/v1/power-plan').expect(200)).body;
    // Off from minute 31 to minute 76 (boot 5 + lead 10 before the start at 91).
    expect(plan.host_hours_off.past_30_days).toBe(0.75);
  });
});
