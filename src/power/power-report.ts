import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { formatWireDate, parseInputDate } from '../common/dates.js';
import { NotFound } from '../common/errors.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { SingleFlight, within } from '../observability/bounded.js';
import { Metrics } from '../observability/metrics.js';
import { DAYS_30_MS, PlanRefresh } from './plan-refresh.js';
import { PlanPages, type PageFilter, type PageHost } from './plan-pages.js';
import type { PlanSummary } from './plan-store.js';
import { isOffState, planOfWindows } from './power-plan.js';
import type { HostPowerResponse } from '../hosts/dto/host-power.dto.js';
import type { PowerPlanBody } from './dto/power-plan.dto.js';
import { DEFAULT_LIMIT, type PowerPlanQuery } from './dto/power-plan.query.js';

const HOUR = 3_600_000;

const hours = (ms: number) => Math.round((ms / HOUR) * 100) / 100;

/**
 * What the power plan does, for admins and /metrics: the fleet's host-hours off over the
 * past 30 days (from the log) and the next 30 (from the plan), hosts per power state, and
 * a page of hosts with their state and planned transitions over the next 30 days. Read
 * from the stored plan, brought up to date first (PlanRefresh): a page costs what changed
 * since the last refresh and the page's hosts, not the fleet.
 */
@Injectable()
export class PowerReport implements OnModuleInit {
  private readonly reads = new SingleFlight<PlanSummary>();
  private published: PlanSummary | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly refresh: PlanRefresh,
    private readonly pages: PlanPages,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onModuleInit(): void {
    // With the plan off there is nothing to publish and nothing is computed.
    if (this.config.power.plan) this.metrics.powerReader = () => this.readMetrics();
  }

  /** A page of the report; the figures are the whole fleet's. */
  async report(query: PowerPlanQuery = {}): Promise<PowerPlanBody> {
    const now = this.clock.now();
    const filter = this.filter(query, now);
    const summary = await this.refresh.refresh(now);
    const hosts = await this.pages.hosts(
      this.dataSource.manager,
      { ...filter, limit: filter.limit + 1 },
      now,
    );
    const page = hosts.slice(0, filter.limit);
    const body: PowerPlanBody = {
      enabled: this.config.power.plan,
      off_idle_minutes: this.config.power.offIdleMinutes,
      boot_seconds: this.config.power.bootSeconds,
      provisioning_lead_minutes: this.config.provisioningLeadMinutes,
      host_hours_off: { past_30_days: hours(summary.pastMs), next_30_days: hours(summary.nextMs) },
      power_states: summary.states,
      hosts: await this.present(page, now),
    };
    if (hosts.length > filter.limit) body.next = nextLink(query, page[page.length - 1].hostId);
    return body;
  }

  /** One host's entry; 404 when there is no such host. */
  async host(id: number): Promise<HostPowerResponse> {
    const now = this.clock.now();
    await this.refresh.refresh(now);
    const hosts = await this.pages.hosts(
      this.dataSource.manager,
      { after: id - 1, limit: 1, host: String(id) },
      now,
    );
    if (hosts.length === 0) throw new NotFound('host_id', String(id));
    const [host] = await this.present(hosts, now);
    return host;
  }

  private filter(query: PowerPlanQuery, now: Date): Omit<PageFilter, 'limit'> & { limit: number } {
    const filter: PageFilter = {
      after: query.marker === undefined ? 0 : Number(query.marker),
      limit: query.limit ?? DEFAULT_LIMIT,
      host: query.host,
      state: query.power_state,
      inPlan: query.in_plan === undefined ? undefined : query.in_plan === 'true',
    };
    if (query.to !== undefined || query.start !== undefined || query.end !== undefined) {
      // Transitions are planned from now, for 30 days.
      const from = query.start === undefined ? now : parseInputDate(query.start, now);
      const until = query.end === undefined ? null : parseInputDate(query.end, now);
      const last = now.getTime() + DAYS_30_MS;
      filter.transitions = {
        to: query.to,
        from: new Date(Math.max(from.getTime(), now.getTime())),
        until: new Date(Math.min(until?.getTime() ?? last, last)),
      };
    }
    return filter;
  }

  private async present(hosts: PageHost[], now: Date): Promise<HostPowerResponse[]> {
    const windows = await this.pages.windows(
      this.dataSource.manager,
      hosts.map((h) => h.hostId),
      now,
    );
    const until = now.getTime() + DAYS_30_MS;
    return hosts.map((host) => {
      const own = host.keepOn ? [] : (windows.get(host.hostId) ?? []);
      const plan = planOfWindows(own, isOffState(host.state), now.getTime(), until);
      return {
        id: String(host.hostId),
        hypervisor_hostname: host.name,
        power_state: host.state,
        always_on: host.alwaysOn,
        holds_servers: host.holdsServers,
        in_plan: !host.keepOn,
        transitions: plan.transitions.map((t) => ({
          at: formatWireDate(new Date(t.at)),
          to: t.to,
        })),
      };
    });
  }

  /**
   * Sets the gauges of /metrics from the stored plan, brought up to date: called by the
   * manager's power run, never by a scrape.
   */
  async refreshMetrics(): Promise<void> {
    if (!this.config.power.plan) return;
    this.published = await this.reads.run(() =>
      within(this.refresh.recent(), this.config.databaseConnectTimeoutMs * 2, 'the power plan'),
    );
  }

  /** The gauges as the last power run left them; nothing is read at scrape time. */
  private readMetrics(): void {
    if (this.published === null) return;
    for (const [state, n] of Object.entries(this.published.states)) {
      this.metrics.powerHosts.set({ state }, n);
    }
    this.metrics.powerOffHostHours.set({ window: 'past_30_days' }, hours(this.published.pastMs));
    this.metrics.powerOffHostHours.set({ window: 'next_30_days' }, hours(this.published.nextMs));
  }
}

/** The next page: the caller's own parameters, with the marker moved on. */
function nextLink(query: PowerPlanQuery, marker: number): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && key !== 'marker' && key !== 'limit') params.set(key, String(value));
  }
  params.set('limit', String(query.limit ?? DEFAULT_LIMIT));
  params.set('marker', String(marker));
  return `/v1/power-plan?${params.toString()}`;
}
