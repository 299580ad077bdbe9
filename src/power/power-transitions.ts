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
import { tryLockHosts } from '../pools/hosts.repository.js';
import { PowerReadiness } from '../pools/power-readiness.js';
import { planHost, type HostPlan, type PowerSettings } from './power-plan.js';
import { PlanCandidates, type Candidate } from './plan-store-candidates.js';
import { PlanRefresh } from './plan-refresh.js';
import { PowerRepository, type HostPower } from './power.repository.js';
import { powerSettings, situationOf } from './situations.js';
import { decisionHorizonMs } from './stored-plan.js';

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
    private readonly refresh: PlanRefresh,
    private readonly candidates: PlanCandidates,
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
   * servers, each checked again on a fresh read once its row is locked. The candidates
   * come from the stored plan, brought up to date first: a run costs what changed.
   */
  async decide(): Promise<Begun[]> {
    const em = this.dataSource.manager;
    const now = this.clock.now();
    // With the plan off there is nothing to do once every host is on: no refresh either.
    if (!this.config.power.plan && !(await this.readiness.anyNotOn(em))) return [];
    await this.refresh.refresh(now);
    const s = powerSettings(this.config);
    const max = this.config.power.maxTransitionsPerMinute;
    const minuteAgo = new Date(now.getTime() - 60_000);
    if ((await this.repo.begunSince(em, minuteAgo)) >= max) return [];
    const picked = await this.candidates.pick(em, now, decisionHorizonMs(s), max);
    const ons = picked.ons;
    const wanted = max - ons.length;
    const offs = wanted > 0 ? await this.withoutServers(await picked.offs(wanted * 3), wanted) : [];
    if (ons.length === 0 && offs.length === 0) return [];
    return withTransaction(this.dataSource, async (tx) => {
      if (!(await this.repo.tryDecisionLock(tx))) return [];
      let room = max - (await this.repo.begunSince(tx, minuteAgo));
      const deadline = new Date(now.getTime() + s.bootMs);
      const claim = this.claim(now);
      const on = ons.slice(0, Math.max(0, room)).map((c) => c.hostId);
      const booting = await this.repo.begin(tx, on, 'off', 'booting', now, deadline, claim);
      room -= booting.length;
      const idle = await this.stillIdle(tx, offs, now, s);
      const off = idle.slice(0, Math.max(0, room));
      const stopping = await this.repo.begin(tx, off, 'on', 'stopping', now, deadline, claim);
      const names = new Map([...ons, ...offs].map((c) => [c.hostId, c.name]));
      const begun = (state: 'booting' | 'stopping') => (id: number) => ({
        hostId: id,
        name: names.get(id) ?? '',
        state,
      });
      return [...booting.map(begun('booting')), ...stopping.map(begun('stopping'))];
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

  /** The hosts of `ids` with their plan over the decision horizon, read afresh. */
  private async plan(
    em: EntityManager,
    now: Date,
    s: PowerSettings,
    ids: number[],
  ): Promise<{ host: HostPower; plan: HostPlan }[]> {
    // Far enough for the first idle stretch: the decision now depends on nothing later.
    const until = now.getTime() + decisionHorizonMs(s);
    const hosts = await this.repo.hosts(em, ids);
    const usage = await this.repo.usage(em, now, new Date(until), ids);
    return hosts.map((host) => ({
      host,
      plan: planHost(
        situationOf(host, usage, this.config.power.plan, true),
        now.getTime(),
        until,
        s,
      ),
    }));
  }

  /** Hosts still wanted off on a fresh read once their rows are locked (none being allocated). */
  private async stillIdle(
    tx: EntityManager,
    offs: Candidate[],
    now: Date,
    s: PowerSettings,
  ): Promise<number[]> {
    const locked = await tryLockHosts(
      tx,
      offs.map((c) => c.hostId),
    );
    if (locked.length === 0) return [];
    const fresh = await this.plan(tx, now, s, locked);
    const idle = new Set(
      fresh.filter((p) => p.plan.want === 'off' && p.host.state === 'on').map((p) => p.host.hostId),
    );
    return offs.map((c) => c.hostId).filter((id) => idle.has(id));
  }

  /**
   * Up to `wanted` of the candidates that hold no servers (a host with servers is never
   * powered off, nor one the driver cannot answer for), asking about a few more than
   * wanted at most; what is found is recorded for the plan's report.
   */
  private async withoutServers(offs: Candidate[], wanted: number): Promise<Candidate[]> {
    const kept: Candidate[] = [];
    const holding: number[] = [];
    for (const c of offs.slice(0, Math.max(0, wanted) * 3)) {
      if (kept.length >= wanted) break;
      try {
        const servers = await this.call(this.driver.serversOnHost(c.name), 'servers', c.name);
        if (servers.length === 0) kept.push(c);
        else holding.push(c.hostId);
      } catch (error) {
        this.logger.warn({
          msg: 'servers unknown; host kept on',
          host: c.name,
          error: errorMessage(error),
        });
      }
    }
    const em = this.dataSource.manager;
    await this.repo.setHoldsServers(em, holding, true);
    await this.repo.setHoldsServers(
      em,
      kept.map((c) => c.hostId),
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
