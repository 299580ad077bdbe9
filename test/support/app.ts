import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent.js';
import { buildApp } from '../../src/app.js';
import { FakeClock } from '../../src/common/clock.js';
import { BUILTIN_RESOURCE_TYPES, loadConfig, type Config } from '../../src/config/config.js';
import { ManagerService } from '../../src/events/manager.service.js';
import type { ResourcePlugin } from '../../src/plugins/resource-plugin.js';
import type { ComputeDriver } from '../../src/compute/compute-driver.js';
import { RecorderPlugin } from './recorder-plugin.js';

export interface TestApp {
  app: INestApplication;
  http: TestAgent;
  clock: FakeClock;
  manager: ManagerService;
  recorder: RecorderPlugin;
  config: Config;
  /** Runs manager polls until nothing is due, waiting for the work each one starts. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  databaseUrl: string;
  env?: Record<string, string>;
  clock?: FakeClock;
  plugins?: ResourcePlugin[];
  recorder?: RecorderPlugin;
  driver?: ComputeDriver;
  /** The manager's timers on (off by default: tests call tick() themselves). */
  managerTimer?: boolean;
}

/** A full Climate on a test database, with a fake clock and the manager timer off. */
export async function startApp(options: TestAppOptions): Promise<TestApp> {
  const recorder = options.recorder ?? new RecorderPlugin();
  const plugins = options.plugins ?? [recorder];
  const config: Config = {
    ...loadConfig(
      {
        DATABASE_URL: options.databaseUrl,
        PLUGINS: recorder.resourceType,
        LOG_LEVEL: process.env.TEST_LOGS ?? 'error',
        ...options.env,
      },
      { resourceTypes: [...BUILTIN_RESOURCE_TYPES, ...plugins.map((p) => p.resourceType)] },
    ),
    managerTimer: options.managerTimer ?? false,
  };
  const clock = options.clock ?? new FakeClock(new Date('2030-01-01T00:00:00Z'));
  const app = await buildApp(config, {
    clock,
    plugins,
    driver: options.driver,
    logger: process.env.TEST_LOGS ? undefined : false,
  });
  await app.init();
  const manager = app.get(ManagerService);
  return {
    app,
    http: request(app.getHttpServer()),
    clock,
    manager,
    recorder,
    config,
    settle: async () => {
      for (let i = 0; i < 100; i++) {
        const claimed = await manager.tick();
        await manager.drain();
        if (claimed === 0) return;
      }
      throw new Error('manager did not settle in 100 polls');
    },
    close: () => app.close(),
  };
}
