import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { sql, SqlParams } from '../database/sql.js';
import { projectHostSpansSql } from '../pools/host-usage.js';
import { ProjectLimitExceeded } from './enforcement.errors.js';
import { hostHoursByPeriod, HostSpan, peakHosts, periodsOf } from './project-limits.js';

const minute = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
const hours = (n: number) => String(Math.round(n * 100) / 100);

/**
 * PROJECT_MAX_HOSTS and PROJECT_MAX_HOST_HOURS, checked inside the create or update
 * transaction after the plugins have allocated: the project's advisory lock serialises
 * the counts, so racing creates of one project see each other's hosts. A create takes
 * the lock in its first statement and counts in the statement that writes
 * (`lockSql`, `spansSql`, `evaluate`).
 */
@Injectable()
export class ProjectLimitsService {
  constructor(@Inject(CONFIG) private readonly config: Config) {}

  limitsFor(projectId: string): { maxHosts: number; maxHostHours: number } {
    const e = this.config.enforcement;
    const own = e.projectLimits[projectId] ?? {};
    return {
      maxHosts: own.maxHosts ?? e.projectMaxHosts,
      maxHostHours: own.maxHostHours ?? e.projectMaxHostHours,
    };
  }

  /** Whether the project has a limit, so that creates and updates must count. */
  limited(projectId: string): boolean {
    const { maxHosts, maxHostHours } = this.limitsFor(projectId);
    return maxHosts !== -1 || maxHostHours !== -1;
  }

  async check(
    tx: EntityManager,
    projectId: string,
    leaseId: string,
    window: { start: Date; end: Date },
  ): Promise<void> {
    if (!this.limited(projectId)) return;
    // Held to the end of the transaction: the next create of the project counts after
    // this one has committed (READ COMMITTED: its count statement sees the rows).
    const lock = new SqlParams();
    await sql(tx, `SELECT ${this.lockSql(lock, projectId)}`, lock.values);
    const p = new SqlParams();
    const { rows } = await sql<Spans>(
      tx,
      `SELECT ${this.spansSql(p, projectId, window)}`,
      p.values,
    );
    this.evaluate(projectId, leaseId, window, toSpans(rows[0]));
  }

  /** SQL that takes the project's lock, to run before the statement that counts. */
  lockSql(p: SqlParams, projectId: string): string {
    return `pg_advisory_xact_lock(hashtext(${p.bind(`climate:limits:${projectId}`)}))`;
  }

  /**
   * SQL of the columns `lease_ids`, `starts`, `ends`: one span per host allocation of the
   * project's leases that counts for `window` (its period with host-hours), cut at its
   * lease's end; for `toSpans`.
   */
  spansSql(p: SqlParams, projectId: string, window: { start: Date; end: Date }): string {
    const { from, to } = this.counted(projectId, window);
    return `array_agg(s.lease_id) AS lease_ids, array_agg(s.start) AS starts, array_agg(s.end) AS ends
      FROM (${projectHostSpansSql(p, projectId, { start: from, end: to })}) s`;
  }

  /** Throws ProjectLimitExceeded when `spans` (this lease's included) pass a limit. */
  evaluate(
    projectId: string,
    leaseId: string,
    window: { start: Date; end: Date },
    spans: HostSpan[],
  ): void {
    const { maxHosts, maxHostHours } = this.limitsFor(projectId);
    if (maxHosts !== -1) {
      const peak = peakHosts(spans, { leaseId, ...window });
      if (peak.total > maxHosts) {
        throw new ProjectLimitExceeded(
          `Project ${projectId} may hold at most ${maxHosts} host(s) at once (PROJECT_MAX_HOSTS); ` +
            `at ${minute(peak.at)} it already holds ${peak.total - peak.own} and this lease ` +
            `would add ${peak.own}`,
        );
      }
    }
    if (maxHostHours !== -1) {
      const periods = periodsOf(window, this.config.enforcement.projectHostHoursPeriodDays);
      const [worst] = hostHoursByPeriod(spans, periods, leaseId);
      if (worst !== undefined && worst.total > maxHostHours) {
        const days = this.config.enforcement.projectHostHoursPeriodDays;
        throw new ProjectLimitExceeded(
          `Project ${projectId} may reserve at most ${maxHostHours} host-hours per ${days}-day ` +
            `period (PROJECT_MAX_HOST_HOURS); in the period ${minute(worst.start)} to ` +
            `${minute(worst.end)} it already holds ${hours(worst.total - worst.own)} and this ` +
            `lease would add ${hours(worst.own)}`,
        );
      }
    }
  }

  /** The time the limits look at: the window, or the host-hours periods it touches. */
  private counted(projectId: string, window: { start: Date; end: Date }): { from: Date; to: Date } {
    if (this.limitsFor(projectId).maxHostHours === -1)
      return { from: window.start, to: window.end };
    const periods = periodsOf(window, this.config.enforcement.projectHostHoursPeriodDays);
    return { from: periods[0].start, to: periods[periods.length - 1].end };
  }
}

/** The columns `spansSql` names. */
export interface Spans {
  lease_ids: string[] | null;
  starts: Date[] | null;
  ends: Date[] | null;
}

export function toSpans(row: Spans): HostSpan[] {
  return (row.lease_ids ?? []).map((leaseId, i) => ({
    leaseId,
    start: row.starts![i],
    end: row.ends![i],
  }));
}
