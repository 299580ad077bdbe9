import { Inject, Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import type { EntityManager } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import type { Lease } from '../model/lease.entity.js';
import { Metrics } from '../observability/metrics.js';
import type { Reservation } from '../model/reservation.entity.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { enforcementLease, EnforcementContext } from './enforcement-lease.js';
import { LeaseWires } from './lease-wires.js';
import { ExternalEndpoint, postToExternalService } from './external-service.client.js';
import { checkMaxLeaseDuration } from './max-lease-duration.js';
import { ProjectLimitsService } from './project-limits.service.js';

type Body = Record<string, unknown>;

/** What on-end will send, taken before the end's actions free the allocations. */
export interface EndSnapshot {
  context: EnforcementContext;
  lease: Body;
}

/**
 * Usage enforcement, the one entry point for the lease code: Blazar's two filters
 * (maximum duration, external service) and Climate's per-project limits.
 */
@Injectable()
export class UsageEnforcement {
  private readonly logger = new Logger('enforcement');
  private readonly calls: Counter<'endpoint' | 'result'>;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly wires: LeaseWires,
    private readonly limits: ProjectLimitsService,
    metrics: Metrics,
    private readonly plugins: PluginRegistry,
  ) {
    this.calls = new Counter({
      name: 'climate_external_service_calls_total',
      help: 'Calls to the external enforcement service by endpoint and result (allowed, refused, failed)',
      labelNames: ['endpoint', 'result'] as const,
      registers: [metrics.registry],
    });
  }

  /** Whether check-create and check-update are called (EXTERNAL_SERVICE_URL set). */
  get external(): boolean {
    return this.config.enforcement.externalServiceUrl !== null;
  }

  /** MAX_LEASE_DURATION_SECONDS, for a new lease or new dates. */
  checkDuration(projectId: string, window: { start: Date; end: Date }): void {
    checkMaxLeaseDuration(this.config.enforcement, projectId, window);
  }

  /** The per-project limits, inside the transaction that allocated. */
  checkProjectLimits(
    tx: EntityManager,
    lease: Lease,
    window: { start: Date; end: Date },
  ): Promise<void> {
    return this.limits.check(tx, lease.projectId, lease.id, window);
  }

  /** Blazar's lease body for the external service, read in `em`. */
  async leaseBody(
    em: EntityManager,
    lease: Lease,
    reservations: Reservation[],
    asRequest = false,
  ): Promise<Body> {
    return enforcementLease(
      em,
      this.wires,
      lease,
      reservations,
      asRequest,
      await this.held(em, reservations),
    );
  }

  /** What the reservations of types that say so (`allocated`) hold. */
  private async held(
    em: EntityManager,
    reservations: Reservation[],
  ): Promise<Map<string, object[]>> {
    const out = new Map<string, object[]>();
    for (const plugin of this.plugins.all()) {
      const own = reservations.filter((r) => r.resourceType === plugin.resourceType);
      if (plugin.allocated === undefined || own.length === 0) continue;
      for (const [id, objects] of await plugin.allocated(em, own)) out.set(id, objects);
    }
    return out;
  }

  context(lease: Lease): EnforcementContext {
    return {
      user_id: lease.userId,
      project_id: lease.projectId,
      auth_url: this.config.keystone.url,
      region_name: null,
    };
  }

  async checkCreate(context: EnforcementContext, lease: Body): Promise<void> {
    await this.post('check-create', { context, lease });
  }

  async checkUpdate(context: EnforcementContext, current: Body, lease: Body): Promise<void> {
    await this.post('check-update', { context, current_lease: current, lease });
  }

  /** What on-end needs, or null when there is no external service; never throws. */
  async endSnapshot(
    em: EntityManager,
    lease: Lease,
    reservations: Reservation[],
  ): Promise<EndSnapshot | null> {
    if (!this.external) return null;
    try {
      return { context: this.context(lease), lease: await this.leaseBody(em, lease, reservations) };
    } catch (error) {
      this.failedOnEnd(lease.id, error);
      return null;
    }
  }

  /** Tells the external service a lease has ended; a failure is logged and counted only. */
  async onEnd(snapshot: EndSnapshot | null): Promise<void> {
    if (snapshot === null) return;
    try {
      await this.post('on-end', snapshot);
    } catch (error) {
      this.failedOnEnd(String(snapshot.lease.id), error);
    }
  }

  private failedOnEnd(leaseId: string, error: unknown): void {
    this.logger.warn({
      msg: 'external service on-end failed; the lease ended anyway',
      lease_id: leaseId,
      error: error instanceof Error ? error.message : String(error),
    });
  }

  private async post(endpoint: ExternalEndpoint, body: unknown): Promise<void> {
    const e = this.config.enforcement;
    if (e.externalServiceUrl === null) return;
    try {
      await postToExternalService(
        {
          baseUrl: e.externalServiceUrl,
          token: e.externalServiceToken,
          timeoutMs: e.externalServiceTimeoutMs,
        },
        endpoint,
        body,
      );
      this.calls.inc({ endpoint, result: 'allowed' });
    } catch (error) {
      const status = (error as { status?: number }).status;
      this.calls.inc({ endpoint, result: status === 400 ? 'refused' : 'failed' });
      throw error;
    }
  }
}
