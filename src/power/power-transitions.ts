import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../compute/compute-driver.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withTransaction } from '../database/transaction.js';
import { Metrics } from '../observability/metrics.js';
import { errorMessage, within } from '../observability/bounded.js';
import { PowerReadiness } from '../pools/power-readiness.js';
import { planHost, type HostPlan, type PowerSettings } from './power-plan.js';
import { PowerRepository, type HostPower } from './power.repository.js';
import { powerSettings, situationOf } from './situations.js';

/** Longest one power call to the compute driver may take. */
export const POWER_CALL_TIMEOUT_MS = 60_000;

/** Unsettled transitions one run sees through at most. */
const FINISH_BATCH = 100;

/** A transition this manager holds: the host is `booting` or `stopping`. */
export interface Begun {
  hostId: number;
  name: string;
  state: 'booting' | 'stopping';
}

interface Planned {
  host: HostPower;
  plan: HostPlan;
  /** When the host is next needed (for the order of power-ons). */
  neededAt: number;
}

/**
 * The power plan's transitions: which hosts to switch now (decided under one lock, at
 * most POWER_MAX_TRANSITIONS_PER_MINUTE across replicas), the driver calls, and seeing
 * unsettled ones through. Every decision is recomputed from the database, and each
 * transition is claimed (state and claim compared and set), so replicas agree and a
 * manager that dies mid-transition leaves it to another once its claim expires.
 */
@Injectable()
export class PowerTransitions {
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly logger = new Logger('power');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: PowerRepository,
    private readonly readiness: PowerReadiness,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  private claim(now: Date): { owner: string; until: Date } {
    return { owner: this.owner, until: new Date(now.getTime() + this.config.eventClaimTtlMs) };
  }

  /**
   * Sees through the transitions nobody holds: those whose manager died (claim expired)
   * and those left booting or stopping by an earlier run. A host the driver shows in
   * the state it left was never switched (or the switch was lost): it is asked again.
   */
  async finish(): Promise<void> {
    const now = this.clock.now();
    const claimed = await this.repo.claimUnsettled(
      this.dataSource.manager,
      now,
      this.claim(now),
      FINISH_BATCH,
    );
    for (const begun of claimed) {
      try {
        const target = begun.state === 'booting' ? 'on' : 'off';
        const state = await this.call(this.driver.powerState(begun.name), 'state', begun.name);
        if (state !== target && (state === 'on' || state === 'off')) await this.switch(begun);
        await this.settleIfDone(begun);
      } catch (error) {
        await this.failed(begun, error);
      }
    }
  }

  /**
   * Begins the transitions the plan wants now, within the minute's budget: power-ons
   * first (soonest needed first), then power-offs (longest off first) of hosts without
   * servers, each checked again on a fresh read once its row is locked.
   */
  async decide(): Promise<Begun[]> {
    const em = this.dataSource.manager;
    const planOn = this.config.power.plan;
    if (!planOn && !(await this.readiness.anyNotOn(em))) return [];
    const now = this.clock.now();
    const s = powerSettings(this.config);
    const max = this.config.power.maxTransitionsPerMinute;
    const minuteAgo = new Date(now.getTime() - 60_000);
    if ((await this.repo.begunSince(em, minuteAgo)) >= max) return [];
    const planned = await this.plan(em, now, s, null);
    const ons = planned
      .filter((p) => p.plan.want === 'on' && p.host.state === 'off')
      .sort((a, b) => a.neededAt - b.neededAt);
    // Hosts last seen with servers are asked about last, so they never crowd others out.
    const offs = await this.withoutServers(
      planned
        .filter((p) => p.plan.want === 'off' && p.host.state === 'on')
        .sort(
          (a, b) =>
            Number(a.host.holdsServers) - Number(b.host.holdsServers) ||
            b.plan.offMs - a.plan.offMs,
        ),
      max - ons.length,
    );
    return withTransaction(this.dataSource, async (tx) => {
      if (!(await this.repo.tryDecisionLock(tx))) return [];
      let room = max - (await this.repo.begunSince(tx, minuteAgo));
      const deadline = new Date(now.getTime() + s.bootMs);
      const claim = this.claim(now);
      const on = ons.slice(0, Math.max(0, room)).map((p) => p.host.hostId);
      const booting = await this.repo.begin(tx, on, 'off', 'booting', now, deadline, claim);
      room -= booting.length;
      const idle = await this.stillIdle(tx, offs, now, s);
      const off = idle.slice(0, Math.max(0, room));
      const stopping = await this.repo.begin(tx, off, 'on', 'stopping', now, deadline, claim);
      const names = new Map(planned.map((p) => [p.host.hostId, p.host.name]));
      return [
        ...booting.map((id) => ({
          hostId: id,
          name: names.get(id) ?? '',
          state: 'booting' as const,
        })),
        ...stopping.map((id) => ({
          hostId: id,
          name: names.get(id) ?? '',
          state: 'stopping' as const,
        })),
      ];
    });
  }

  /** Asks the driver for each begun transition and settles those already done. */
  async act(begun: Begun[]): Promise<void> {
    for (const b of begun) {
      try {
        await this.switch(b);
        this.logger.log({
          msg: b.state === 'booting' ? 'powering on' : 'powering off',
          host: b.name,
        });
        await this.settleIfDone(b);
      } catch (error) {
        await this.failed(b, error);
      }
    }
  }

  /** Every host (or those of `ids`) with its plan over the decision horizon. */
  private async plan(
    em: EntityManager,
    now: Date,
    s: PowerSettings,
    ids: number[] | null,
  ): Promise<Planned[]> {
    // Far enough for the first idle stretch: the decision now depends on nothing later.
    const until = now.getTime() + s.idleMs + s.bootMs + 2 * s.leadMs + 60_000;
    const hosts = await this.repo.hosts(em, ids);
    const usage = await this.repo.usage(em, now, new Date(until), ids);
    return hosts.map((host) => {
      const situation = situationOf(host, usage, this.config.power.plan, true);
      const first = Math.min(...situation.busy.map((b) => b.start));
      return {
        host,
        plan: planHost(situation, now.getTime(), until, s),
        neededAt: situation.keepOn ? -Infinity : first - s.leadMs,
      };
    });
  }

  /** Hosts still wanted off on a fresh read once their rows are locked (none being allocated). */
  private async stillIdle(
    tx: EntityManager,
    offs: Planned[],
    now: Date,
    s: PowerSettings,
  ): Promise<number[]> {
    const locked = await this.repo.lockHosts(
      tx,
      offs.map((p) => p.host.hostId),
    );
    if (locked.length === 0) return [];
    const fresh = await this.plan(tx, now, s, locked);
    const idle = new Set(
      fresh.filter((p) => p.plan.want === 'off' && p.host.state === 'on').map((p) => p.host.hostId),
    );
    return offs.map((p) => p.host.hostId).filter((id) => idle.has(id));
  }

  /**
   * Up to `wanted` of the candidates that hold no servers (a host with servers is never
   * powered off, nor one the driver cannot answer for), asking about a few more than
   * wanted at most; what is found is recorded for the plan's report.
   */
  private async withoutServers(offs: Planned[], wanted: number): Promise<Planned[]> {
    const kept: Planned[] = [];
    const holding: number[] = [];
    for (const p of offs.slice(0, Math.max(0, wanted) * 3)) {
      if (kept.length >= wanted) break;
      try {
        const servers = await this.call(
          this.driver.serversOnHost(p.host.name),
          'servers',
          p.host.name,
        );
        if (servers.length === 0) kept.push(p);
        else holding.push(p.host.hostId);
      } catch (error) {
        this.logger.warn({
          msg: 'servers unknown; host kept on',
          host: p.host.name,
          error: errorMessage(error),
        });
      }
    }
    const em = this.dataSource.manager;
    await this.repo.setHoldsServers(em, holding, true);
    await this.repo.setHoldsServers(
      em,
      kept.map((p) => p.host.hostId),
      false,
    );
    return kept;
  }

  private async switch(b: Begun): Promise<void> {
    const call = b.state === 'booting' ? this.driver.powerOn(b.name) : this.driver.powerOff(b.name);
    await this.call(call, b.state === 'booting' ? 'power on' : 'power off', b.name);
  }

  /** Records the new state once the driver shows it; else lets go for a later run. */
  private async settleIfDone(b: Begun): Promise<void> {
    const target = b.state === 'booting' ? 'on' : 'off';
    const state = await this.call(this.driver.powerState(b.name), 'state', b.name);
    if (state !== target) {
      await this.repo.release(this.dataSource.manager, [b.hostId], this.owner);
      return;
    }
    const settled = await withTransaction(this.dataSource, (tx) =>
      this.repo.settle(tx, b.hostId, b.state, target, this.clock.now(), this.owner),
    );
    if (settled) {
      this.metrics.powerTransitions.inc({ to: target, result: 'done' });
      this.logger.log({ msg: `host ${target}`, host: b.name });
    }
  }

  private async failed(b: Begun, error: unknown): Promise<void> {
    this.metrics.powerTransitions.inc({
      to: b.state === 'booting' ? 'on' : 'off',
      result: 'failed',
    });
    this.logger.warn({
      msg: 'power transition failed; will retry',
      host: b.name,
      error: errorMessage(error),
    });
    await this.repo
      .release(this.dataSource.manager, [b.hostId], this.owner)
      .catch((e: unknown) =>
        this.logger.warn({ msg: 'claim not released', error: errorMessage(e) }),
      );
  }

  private call<T>(work: Promise<T>, what: string, host: string): Promise<T> {
    return within(work, POWER_CALL_TIMEOUT_MS, `${what} of ${host}`);
  }
}
