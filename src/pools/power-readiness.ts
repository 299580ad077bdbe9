import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { ResourceBusy } from '../common/errors.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { sql, type SqlParams } from '../database/sql.js';
import { hostIdsOfSql } from './host-usage.js';
import { hostJoin } from './hosts.repository.js';
import type { HostQuery } from '../requirements/host-query.js';
import { FreeStarts } from './free-starts.js';

/** Distinct readiness times the earliest-start search tries at most (the last one covers the rest). */
const MAX_THRESHOLDS = 8;

/**
 * When a host of `host_power` (alias `hp`) can be ready for a lease: on now; booting at
 * its deadline; off a boot from now; stopping a boot after its deadline. $now and $boot
 * are placeholders given by the caller.
 */
function readySql(now: string, boot: string): string {
  return `greatest(CASE hp.state WHEN 'off' THEN ${now}::timestamptz + ${boot}::interval
                                  WHEN 'stopping' THEN hp.deadline + ${boot}::interval
                                  ELSE hp.deadline END, ${now}::timestamptz)`;
}

/**
 * Which hosts can be ready for a lease, given the power plan (docs/power.md). A host
 * that is on can be prepared at once; one that is off, booting or stopping only once it
 * is on, and then the lead time (PROVISIONING_LEAD_MINUTES) is kept before the start.
 * So a host is offered for a start only if it is on, or if it can be on by the start
 * minus the lead time. Without powered-off hosts (the power plan off) nothing changes.
 */
@Injectable()
export class PowerReadiness {
  constructor(
    private readonly allocations: FreeStarts,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  private get bootInterval(): string {
    return `${this.config.power.bootSeconds} seconds`;
  }

  private get leadInterval(): string {
    return `${this.config.provisioningLeadMinutes} minutes`;
  }

  /** Whether some host is not on (an index probe): otherwise there is nothing to restrict. */
  async anyNotOn(em: EntityManager): Promise<boolean> {
    const { rows } = await sql<{ found: boolean }>(
      em,
      `SELECT EXISTS (SELECT 1 FROM host_power WHERE state <> 'on') AS found`,
    );
    return rows[0].found;
  }

  /** `q` narrowed to the hosts that can be ready for a lease starting at `start`. */
  restrict(q: HostQuery, start: Date, now = this.clock.now()): HostQuery {
    const params = [...q.params, now, this.bootInterval, start, this.leadInterval];
    const [n, boot, s, lead] = [
      params.length - 3,
      params.length - 2,
      params.length - 1,
      params.length,
    ];
    const where = `NOT EXISTS (SELECT 1 FROM host_power hp WHERE hp.host_id = h.id AND hp.state <> 'on'
        AND ${readySql(`$${n}`, `$${boot}`)}
            > greatest($${s}::timestamptz - $${lead}::interval, $${n}::timestamptz))`;
    return { ...q, where: `(${q.where}) AND ${where}`, params };
  }

  /** Of `hostIds`, those that cannot be ready by `start`, read afresh. */
  async notReady(em: EntityManager, hostIds: number[], start: Date): Promise<number[]> {
    if (hostIds.length === 0) return [];
    const { rows } = await sql<{ host_id: number }>(
      em,
      `SELECT hp.host_id FROM host_power hp
        WHERE hp.host_id = ANY($1::int[]) AND hp.state <> 'on'
          AND ${readySql('$2', '$3')} > greatest($4::timestamptz - $5::interval, $2::timestamptz)`,
      [hostIds, this.clock.now(), this.bootInterval, start, this.leadInterval],
    );
    return rows.map((r) => r.host_id);
  }

  /**
   * SQL of the hosts of `ids` (an SQL int[]) that cannot be ready by `start`, for a
   * statement whose values `p` binds (the create's recheck after its locks).
   */
  notReadySql(p: SqlParams, ids: string, start: Date): string {
    const now = p.bind(this.clock.now());
    const boot = p.bind(this.bootInterval);
    return `SELECT hp.host_id FROM host_power hp
        WHERE hp.host_id = ANY(${ids}) AND hp.state <> 'on'
          AND ${readySql(now, boot)}
              > greatest(${p.bind(start)}::timestamptz - ${p.bind(this.leadInterval)}::interval, ${now}::timestamptz)`;
  }

  /**
   * Picks hosts with `find` among those that can be ready by `start`. A host whose
   * power-off committed while `find` waited for its row is seen by a fresh read and
   * swapped for another.
   */
  async pick(
    em: EntityManager,
    q: HostQuery,
    start: Date,
    find: (q: HostQuery, exclude: number[]) => Promise<number[]>,
  ): Promise<number[]> {
    if (!(await this.anyNotOn(em))) return find(q, []);
    const ready = this.restrict(q, start);
    let exclude: number[] = [];
    for (let round = 0; ; round++) {
      const ids = await find(ready, exclude);
      const late = await this.notReady(em, ids, start);
      if (late.length === 0 || round >= 2) return ids.filter((id) => !late.includes(id));
      exclude = [...exclude, ...late];
    }
  }

  /**
   * The earliest starts at which `count` hosts of `q` are free for `durationMs` and can
   * be ready: as FreeStarts.earliestStarts, tried once per readiness time of
   * the hosts that are not on, each try counting the hosts ready by then.
   */
  async earliestStarts(
    em: EntityManager,
    q: HostQuery,
    count: number,
    durationMs: number,
    from: Date,
    limit: number,
  ): Promise<{ start: Date; free: number }[]> {
    const now = this.clock.now();
    const thresholds = (await this.thresholds(em, now)).filter((t) => t > from);
    if (thresholds.length === 0 && !(await this.anyNotOn(em))) {
      return this.allocations.earliestStarts(em, q, count, durationMs, from, limit);
    }
    const best = new Map<number, number>();
    for (const at of [from, ...thresholds]) {
      const found = await this.allocations.earliestStarts(
        em,
        this.restrict(q, at, now),
        count,
        durationMs,
        at,
        limit,
      );
      for (const f of found) {
        const key = f.start.getTime();
        best.set(key, Math.max(best.get(key) ?? 0, f.free));
      }
    }
    return [...best]
      .sort(([a], [b]) => a - b)
      .slice(0, limit)
      .map(([start, free]) => ({ start: new Date(start), free }));
  }

  /**
   * The starts from which more hosts become ready (their readiness plus the lead time,
   * up to the next minute), earliest first; past MAX_THRESHOLDS the last one stands for
   * the rest, so that every host is counted in some try.
   */
  private async thresholds(em: EntityManager, now: Date): Promise<Date[]> {
    const { rows } = await sql<{ t: Date }>(
      em,
      `SELECT DISTINCT date_trunc('minute', ${readySql('$1', '$2')} + $3::interval + interval '59.999 seconds') AS t
         FROM host_power hp WHERE hp.state <> 'on' ORDER BY t`,
      [now, this.bootInterval, this.leadInterval],
    );
    const all = rows.map((r) => r.t);
    if (all.length <= MAX_THRESHOLDS) return all;
    return [...all.slice(0, MAX_THRESHOLDS - 1), all[all.length - 1]];
  }

  /**
   * A lease starts only on hosts that are on: the start waits (ResourceBusy, retried by
   * the manager without counting an attempt) while one of the reservation's hosts is
   * off or still booting; the power plan powers it on since it is needed now.
   */
  async assertOn(em: EntityManager, reservationId: string): Promise<void> {
    const { rows } = await sql<{ name: string; state: string }>(
      em,
      `SELECT h.hypervisor_hostname AS name, hp.state
         FROM host_power hp ${hostJoin('h', 'hp.host_id')}
        WHERE hp.state <> 'on' AND hp.host_id IN (
                ${hostIdsOfSql('$1')})
        ORDER BY h.id`,
      [reservationId],
      // Every start asks: planned each time it cost about as much as the rest of the
      // start's reads together (0.4-0.5 ms of planning for 0.01 ms of execution).
      { prepare: true },
    );
    if (rows.length > 0) {
      const hosts = rows.map((r) => `${r.name} (${r.state})`).join(', ');
      throw new ResourceBusy(`hosts not on yet: ${hosts}; the start waits for them`);
    }
  }
}
