import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withTransaction } from '../database/transaction.js';
import { refreshHostBusy } from '../pools/host-busy.js';
import type { PowerSettings } from './power-plan.js';
import { PlanStore, type PlanSummary } from './plan-store.js';
import { PowerRepository } from './power.repository.js';
import { powerSettings, situationOf } from './situations.js';
import { readHorizonMs, storedPlan } from './stored-plan.js';

export const DAYS_30_MS = 30 * 24 * 3_600_000;

/** How old a refresh's summary may be for the gauges of /metrics. */
const REUSE_MS = 1000;

/** Hosts computed per round of statements (a first run, or a change of settings, does all). */
const CHUNK = 2000;

/**
 * Brings the stored power plan up to date (see the PowerPlanStore migration): the hosts
 * whose situation changed since the last refresh, and those whose plan can change by the
 * clock alone now, are computed again; the running sums move to now. Its cost follows
 * those hosts and the stretches that began or ended since, not the fleet. Run by the
 * manager's power run and before each report, one at a time (a lock).
 */
@Injectable()
export class PlanRefresh {
  constructor(
    private readonly dataSource: DataSource,
    private readonly store: PlanStore,
    private readonly repo: PowerRepository,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  private last: { at: number; summary: PlanSummary } | null = null;

  /**
   * The summary of this process's last refresh if it is at most REUSE_MS old and nothing
   * has been marked changed since (one probe); else a refresh. For /metrics' gauges,
   * published right after the run's own refresh.
   */
  async recent(now = this.clock.now()): Promise<PlanSummary> {
    const last = this.last;
    if (last !== null && now.getTime() - last.at <= REUSE_MS) {
      if (!(await this.store.marked(this.dataSource.manager))) return last.summary;
    }
    return this.refresh(now);
  }

  async refresh(now = this.clock.now()): Promise<PlanSummary> {
    const summary = await this.refreshOnce(now);
    this.last = { at: now.getTime(), summary };
    return summary;
  }

  private async refreshOnce(now: Date): Promise<PlanSummary> {
    // host_busy rebuilt for hosts whose allocations changed marks them for the plan.
    await refreshHostBusy(this.dataSource.manager);
    return withTransaction(this.dataSource, async (tx) => {
      await this.store.lock(tx);
      const s = powerSettings(this.config);
      const settings = JSON.stringify({ plan: this.config.power.plan, ...s });
      const changed = await this.store.takeChanges(tx);
      const { due, otherSettings } = await this.store.due(tx, now, settings);
      const all = otherSettings ? await this.store.resetSettings(tx, settings) : [];
      const ids = [...new Set([...changed, ...due, ...all])].sort((a, b) => a - b);
      const marked = new Set(changed);
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        await this.recompute(tx, chunk, now, s);
        await this.store.refreshSpans(
          tx,
          chunk.filter((id) => marked.has(id)),
        );
      }
      return this.store.summary(tx, now, DAYS_30_MS);
    });
  }

  /** The plans of `ids` from their situation now; hosts gone lose theirs. */
  private async recompute(
    tx: EntityManager,
    ids: number[],
    now: Date,
    s: PowerSettings,
  ): Promise<void> {
    const planOn = this.config.power.plan;
    const hosts = await this.repo.hosts(tx, ids);
    // Hosts registered since get their record (on), as the plan first sees them.
    const unrecorded = planOn ? hosts.filter((h) => !h.recorded) : [];
    await this.repo.ensureRows(
      tx,
      unrecorded.map((h) => h.hostId),
      now,
    );
    for (const host of unrecorded) host.changedAt = now;
    const usage = await this.repo.usage(tx, now, new Date(now.getTime() + readHorizonMs(s)), ids);
    const plans = hosts.map((host) => ({
      hostId: host.hostId,
      state: host.state,
      plan: storedPlan(
        situationOf(host, usage, planOn),
        situationOf(host, usage, planOn, true),
        now.getTime(),
        s,
      ),
    }));
    await this.store.replaceWindows(
      tx,
      ids,
      plans.flatMap((p) => p.plan.windows.map((w) => ({ hostId: p.hostId, ...w }))),
    );
    await this.store.writePlans(tx, ids, plans, now);
  }
}
