import { SchedulerRegistry } from '@nestjs/schedule';
import type { Config } from '../config/config.js';
import { Metrics } from './metrics.js';
import { PeriodicJobs } from './periodic-jobs.js';

function jobsFor(role: Config['role'], managerTimer: boolean) {
  const metrics = new Metrics();
  const scheduler = new SchedulerRegistry();
  const config = { role, managerTimer } as Config;
  return { jobs: new PeriodicJobs(metrics, scheduler, config), metrics, scheduler };
}

async function runsOf(metrics: Metrics, job: string, result: string): Promise<number> {
  const { values } = await metrics.periodicRuns.get();
  return values.find((v) => v.labels.job === job && v.labels.result === result)?.value ?? 0;
}

describe('PeriodicJobs', () => {
  it('should run a job on its timer only where the manager runs with its timers on', async () => {
    for (const [role, timer, timed] of [
      ['all', true, true],
      ['manager', true, true],
      ['api', true, false],
      ['manager', false, false],
    ] as const) {
      const { jobs, scheduler } = jobsFor(role, timer);
      let runs = 0;
      const job = jobs.define({ name: 'count', everyMs: 5, run: async () => void runs++ });
      job.start();
      expect(job.timed).toBe(timed);
      expect(scheduler.getIntervals()).toEqual(timed ? ['climate-count'] : []);
      await new Promise((resolve) => setTimeout(resolve, 40));
      await jobs.onApplicationShutdown();
      expect(runs > 0).toBe(timed);
      expect(scheduler.getIntervals()).toEqual([]);
    }
  });

  it('should share a run in hand instead of starting a second one', async () => {
    const { jobs, metrics } = jobsFor('manager', false);
    let release!: () => void;
    let started = 0;
    const job = jobs.define({
      name: 'slow',
      everyMs: 1000,
      run: () => {
        started++;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    const first = job.tick();
    const second = job.tick();
    expect(second).toBe(first);
    release();
    await first;
    expect(await runsOf(metrics, 'slow', 'ok')).toBe(1);
    const third = job.tick();
    expect(third).not.toBe(first);
    release();
    await third;
    expect(started).toBe(2);
    expect(await runsOf(metrics, 'slow', 'ok')).toBe(2);
  });

  it('should count and log a failed run without rejecting', async () => {
    const { jobs, metrics } = jobsFor('manager', false);
    const job = jobs.define({
      name: 'broken',
      everyMs: 1000,
      run: () => Promise.reject(new Error('database away')),
    });
    await expect(job.tick()).resolves.toBeUndefined();
    expect(await runsOf(metrics, 'broken', 'failed')).toBe(1);
  });

  it('should stop without waiting for ever on a run that hangs', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const { jobs } = jobsFor('manager', false);
      const job = jobs.define({ name: 'hung', everyMs: 1000, run: () => new Promise(() => {}) });
      void job.tick();
      let stopped = false;
      const stopping = job.stop().then(() => (stopped = true));
      await jest.advanceTimersByTimeAsync(9_000);
      expect(stopped).toBe(false);
      await jest.advanceTimersByTimeAsync(1_100);
      await stopping;
      expect(stopped).toBe(true);
      // A stopped job runs no more.
      let ran = false;
      const again = jobs.define({
        name: 'after',
        everyMs: 1000,
        run: async () => void (ran = true),
      });
      await again.stop();
      await again.tick();
      expect(ran).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });
});
