import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { sql } from '../database/sql.js';
import { ProjectLimitExceeded } from './enforcement.errors.js';
import { hostHoursByPeriod, HostSpan, peakHosts, periodsOf } from './project-limits.js';

const minute = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
const hours = (n: number) => String(Math.round(n * 100) / 100);

/**
 * PROJECT_MAX_HOSTS and PROJECT_MAX_HOST_HOURS, checked inside the create or update
 * transaction after the plugins have allocated: the project's advisory lock serialises
 * the counts, so racing creates of one project see each other's hosts.
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

  async check(
    tx: EntityManager,
    projectId: string,
    leaseId: string,
    window: { start: Date; end: Date },
  ): Promise<void> {
    const { maxHosts, maxHostHours } = this.limitsFor(projectId);
    if (maxHosts === -1 && maxHostHours === -1) return;
    // Held to the end of the transaction: the next create of the project counts after
    // this one has committed (READ COMMITTED: its count statement sees the rows).
    await sql(tx, `SELECT pg_advisory_xact_lock(hashtext($1))`, [`climate:limits:${projectId}`]);
    const periods = periodsOf(window, this.config.enforcement.projectHostHoursPeriodDays);
    const from = maxHostHours === -1 ? window.start : periods[0].start;
    const to = maxHostHours === -1 ? window.end : periods[periods.length - 1].end;
    const spans = await this.spans(tx, projectId, from, to);
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

  /** One span per host allocation of the project's leases, cut at its lease's end. */
  private async spans(
    tx: EntityManager,
    projectId: string,
    from: Date,
    to: Date,
  ): Promise<HostSpan[]> {
    const { rows } = await sql<{ lease_id: string; start: Date; end: Date }>(
      tx,
      `SELECT r.lease_id, lower(a.during) AS start, least(upper(a.during), l.end_at) AS end
         FROM host_allocations a
         JOIN reservations r ON r.id = a.reservation_id
         JOIN leases l ON l.id = r.lease_id
        WHERE l.project_id = $1 AND a.during && tstzrange($2, $3, '[)')`,
      [projectId, from, to],
    );
    return rows.map((r) => ({ leaseId: r.lease_id, start: r.start, end: r.end }));
  }
}
