/**
 * One manager of the storm bench, in its own Node process (forked by storm.ts), as a
 * replica would run. Its clock is the storm's: the parent sends `{ at, real }` and from
 * then on "now" is `at` plus the real time since `real`, the same in every manager.
 */
import 'reflect-metadata';
import { buildApp } from '../src/app.js';
import { Clock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/config.js';
import { statements } from './stats.js';
import type { ManagerStats } from './storm-meter.js';

export interface StormOrder {
  url: string;
  /** The fake time that `real` (epoch ms) stands for. */
  at: string;
  real: number;
}

class StormClock extends Clock {
  private at = new Date('2035-01-01T00:00:00Z').getTime();
  private real = Date.now();

  set(order: StormOrder): void {
    this.at = new Date(order.at).getTime();
    this.real = order.real;
  }

  now(): Date {
    return new Date(this.at + (Date.now() - this.real));
  }
}

if (process.send) {
  const clock = new StormClock();
  let started = false;
  statements.install();
  process.on('message', (order: StormOrder | 'stop' | 'stats') => {
    if (order === 'stop') process.exit(0);
    if (order === 'stats') {
      const cpu = process.cpuUsage();
      const stats: ManagerStats = {
        statements: statements.count,
        cpuMs: (cpu.user + cpu.system) / 1000,
      };
      process.send?.(stats);
      return;
    }
    clock.set(order);
    if (started) return;
    started = true;
    const config = loadConfig({
      DATABASE_URL: order.url,
      ROLE: 'manager',
      PLUGINS: 'physical:host,virtual:instance',
      LOG_LEVEL: 'error',
      MINUTES_BEFORE_END_LEASE: '0',
      ...(process.env.EVENT_CONCURRENCY
        ? { EVENT_CONCURRENCY: process.env.EVENT_CONCURRENCY }
        : {}),
      ...(process.env.EVENT_POLL_MS ? { EVENT_POLL_MS: process.env.EVENT_POLL_MS } : {}),
    });
    buildApp(config, { clock, logger: false })
      .then((app) => app.init())
      .then(
        () => process.send?.('ready'),
        (error: unknown) => {
          console.error(error);
          process.exit(1);
        },
      );
  });
}
