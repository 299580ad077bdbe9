import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { buildApp } from '../src/app.js';
import { FakeClock } from '../src/common/clock.js';
import { loadConfig, type Config } from '../src/config/config.js';

// PGlite takes a few seconds to start; this file starts it several times.
jest.setTimeout(120_000);

const LOCK = 'climate.lock';

/** A PID that no process has: one of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid;
}

describe('one process per embedded DATA_DIR', () => {
  const clock = new FakeClock(new Date('2042-01-01T00:00:00Z'));
  const dirs: string[] = [];
  const apps: INestApplication[] = [];

  function configFor(dataDir: string): Config {
    return { ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'error' }), managerTimer: false };
  }
  function newDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'climate-lock-'));
    dirs.push(dir);
    return dir;
  }
  async function boot(dataDir: string): Promise<INestApplication> {
    const app = await buildApp(configFor(dataDir), { clock, plugins: [], logger: false });
    apps.push(app);
    await app.init();
    return app;
  }
  async function close(app: INestApplication): Promise<void> {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  }
  async function hostNames(app: INestApplication): Promise<string[]> {
    const res = await request(app.getHttpServer()).get('/v1/os-hosts').expect(200);
    const hosts = res.body.hosts as { hypervisor_hostname: string }[];
    return hosts.map((h) => h.hypervisor_hostname).sort();
  }

  afterAll(async () => {
    for (const app of apps.splice(0)) await app.close().catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('should refuse a second process on the same DATA_DIR, naming it and the holder, while the first keeps serving', async () => {
    const dir = newDir();
    const first = await boot(dir);
    const http = request(first.getHttpServer());
    await http.post('/v1/os-hosts').send({ name: 'before', vcpus: 2 }).expect(201);

    const refused = await buildApp(configFor(dir), { clock, plugins: [], logger: false }).then(
      (app) => {
        apps.push(app);
        return null;
      },
      (error: unknown) => error as Error,
    );
    expect(refused).toBeInstanceOf(Error);
    expect(refused?.message).toContain(resolve(dir));
    expect(refused?.message).toContain(`PID ${process.pid}`);
    expect(readFileSync(join(dir, LOCK), 'utf8').trim()).toBe(String(process.pid));

    // The first process serves on, writes, and its writes survive a restart.
    await http.post('/v1/os-hosts').send({ name: 'after', vcpus: 2 }).expect(201);
    expect(await hostNames(first)).toEqual(['after', 'before']);
    await close(first);
    expect(existsSync(join(dir, LOCK))).toBe(false);

    const again = await boot(dir);
    expect(await hostNames(again)).toEqual(['after', 'before']);
    await close(again);
  });

  it('should refuse to start when another live process holds the lock', async () => {
    const dir = newDir();
    const holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(join(dir, LOCK), `${holder.pid}\n`);
      await expect(buildApp(configFor(dir), { clock, plugins: [], logger: false })).rejects.toThrow(
        `PID ${holder.pid}`,
      );
      // Its lock is left alone.
      expect(readFileSync(join(dir, LOCK), 'utf8').trim()).toBe(String(holder.pid));
    } finally {
      holder.kill();
    }
  });

  it('should take over a stale lock whose process is gone', async () => {
    const dir = newDir();
    writeFileSync(join(dir, LOCK), `${deadPid()}\n`);
    const app = await boot(dir);
    expect(readFileSync(join(dir, LOCK), 'utf8').trim()).toBe(String(process.pid));
    await request(app.getHttpServer()).post('/v1/os-hosts').send({ name: 'h' }).expect(201);
    await close(app);
    expect(existsSync(join(dir, LOCK))).toBe(false);
  });
});
