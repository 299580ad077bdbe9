import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { formatWireDate } from '../common/dates.js';
import { NotFound } from '../common/errors.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { SingleFlight, within } from '../observability/bounded.js';
import { Metrics } from '../observability/metrics.js';
import { planHost } from './power-plan.js';
import { PowerRepository, type HostPower } from './power.repository.js';
import { POWER_STATES, type HostPowerResponse } from '../hosts/dto/host-power.dto.js';
import type { PowerPlanBody } from './dto/power-plan.dto.js';
import { powerSettings, situationOf } from './situations.js';

const HOUR = 3_600_000;
const DAYS_30 = 30 * 24 * HOUR;

const hours = (ms: number) => Math.round((ms / HOUR) * 100) / 100;

/**
 * What the power plan does, for admins and /metrics: each host's state and planned
 * transitions over the next 30 days, and the host-hours off over the past 30 days (from
 * the log) and the next 30 (from the plan). Read from the database each time.
 */
@Injectable()
export class PowerReport implements OnModuleInit {
  private readonly reads = new SingleFlight<PowerPlanBody>();
  private published: {
    states: Map<string, number>;
    hours: PowerPlanBody['host_hours_off'];
  } | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: PowerRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onModuleInit(): void {
    // With the plan off there is nothing to publish and nothing is computed.
    if (this.config.power.plan) this.metrics.powerReader = () => this.readMetrics();
  }

  async report(ids: number[] | null = null): Promise<PowerPlanBody> {
    const em = this.dataSource.manager;
    const now = this.clock.now();
    const s = powerSettings(this.config);
    const hosts = await this.repo.hosts(em, ids);
    const until = now.getTime() + DAYS_30;
    const usage = await this.repo.usage(em, now, new Date(until + s.leadMs), ids);
    const past = await this.repo.offSince(em, new Date(now.getTime() - DAYS_30), now);
    let next = 0;
    const list = hosts.map((host): HostPowerResponse => {
      const situation = situationOf(host, usage, this.config.power.plan);
      const plan = planHost(situation, now.getTime(), until, s);
      next += plan.offMs;
      return this.present(host, situation.keepOn, plan.transitions);
    });
    return {
      enabled: this.config.power.plan,
      off_idle_minutes: this.config.power.offIdleMinutes,
      boot_seconds: this.config.power.bootSeconds,
      provisioning_lead_minutes: this.config.provisioningLeadMinutes,
      host_hours_off: {
        past_30_days: hours([...past.values()].reduce((a, b) => a + b, 0)),
        next_30_days: hours(next),
      },
      hosts: list,
    };
  }

  /** One host's entry; 404 when there is no such host. */
  async host(id: number): Promise<HostPowerResponse> {
    const [host] = (await this.report([id])).hosts;
    if (host === undefined) throw new NotFound('host_id', String(id));
    return host;
  }

  private present(
    host: HostPower,
    keepOn: boolean,
    transitions: { at: number; to: 'on' | 'off' }[],
  ): HostPowerResponse {
    return {
      id: String(host.hostId),
      hypervisor_hostname: host.name,
      power_state: host.state,
      always_on: host.alwaysOn,
      holds_servers: host.holdsServers,
      in_plan: !keepOn,
      transitions: transitions.map((t) => ({ at: formatWireDate(new Date(t.at)), to: t.to })),
    };
  }

  /**
   * Sets the gauges of /metrics from a fresh report: called by the manager's power run,
   * never by a scrape (a report reads every host and 30 days of usage).
   */
  async refreshMetrics(): Promise<void> {
    if (!this.config.power.plan) return;
    const body = await this.reads.run(() =>
      within(this.report(), this.config.databaseConnectTimeoutMs * 2, 'the power report'),
    );
    const states = new Map<string, number>(POWER_STATES.map((state) => [state, 0]));
    for (const h of body.hosts) states.set(h.power_state, (states.get(h.power_state) ?? 0) + 1);
    this.published = { states, hours: body.host_hours_off };
  }

  /** The gauges as the last power run left them; nothing is read at scrape time. */
  private readMetrics(): void {
    if (this.published === null) return;
    for (const [state, n] of this.published.states) this.metrics.powerHosts.set({ state }, n);
    const { past_30_days, next_30_days } = this.published.hours;
    this.metrics.powerOffHostHours.set({ window: 'past_30_days' }, past_30_days);
    this.metrics.powerOffHostHours.set({ window: 'next_30_days' }, next_30_days);
  }
}
