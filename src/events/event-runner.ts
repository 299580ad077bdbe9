import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { isResourceBusy, ResourceBusy } from '../common/errors.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { withTransaction } from '../database/transaction.js';
import { withFramedTransaction } from '../database/framed-transaction.js';
import type { SqlParams } from '../database/sql.js';
import { Lease } from '../model/lease.entity.js';
import { canTransition, deriveStableStatus, LeaseStatus } from '../model/lease-status.js';
import { LeasesRepository } from '../leases/leases.repository.js';
import { setStatusSql } from '../model/lease-tables-status.js';
import { PluginTimeout } from '../plugins/plugin-registry.js';
import { Reservation } from '../model/reservation.entity.js';
import { ReservationActions } from '../reservations/reservation-actions.js';
import type { LeaseEvent } from '../model/lease-event.entity.js';
import { retryDelayMs, type EventType } from '../model/event-status.js';
import { ClaimLost, EventsRepository } from './events.repository.js';
import { Metrics } from '../observability/metrics.js';
import { LeaseNotifier } from '../leases/lease-notifier.js';

/** The lease is not in a state where this event can run yet; try again later. */
class NotReady extends Error {}

/** How many polls a waiting event sits out before it looks again. */
const WAIT_RETRY_POLLS = 5;

interface Step {
  /** Set while the action runs; null when the lease's status does not change. */
  during: LeaseStatus | null;
  /** Where an event without a transitional status may run. */
  from?: LeaseStatus[];
  /** Lease statuses in which there is nothing left to do. */
  skip: LeaseStatus[];
}

const STEPS: Record<EventType, Step> = {
  start_lease: { during: 'STARTING', skip: [] },
  end_lease: { during: 'TERMINATING', skip: [] },
  before_end_lease: { during: null, from: ['ACTIVE'], skip: ['TERMINATED', 'ERROR'] },
};

/**
 * Whether the event may run now: the lease state machine allows the move to the
 * transitional status, or the lease is in it already (a retry after a crash).
 */
function mayRun(step: Step, status: LeaseStatus): boolean {
  if (step.during === null) return (step.from ?? []).includes(status);
  return status === step.during || canTransition(status, step.during);
}

/** Runs one claimed event: the lease's transition, the plugins' actions, the outcome. */
@Injectable()
export class EventRunner {
  private readonly logger = new Logger('manager');

  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventsRepository,
    private readonly leases: LeasesRepository,
    private readonly actions: ReservationActions,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
    private readonly notifier: LeaseNotifier,
  ) {}

  async run(event: LeaseEvent, owner: string): Promise<void> {
    let previous: LeaseStatus | null = null;
    try {
      const begun = await this.begin(event);
      if (begun === null) return this.complete(event, owner);
      previous = begun.previous;
      const started = await this.act(event.eventType, begun.lease, begun.reservations);
      await this.complete(event, owner, started);
    } catch (error) {
      if (error instanceof ClaimLost) {
        this.logger.warn({
          msg: 'claim lost; another manager finished the event',
          event_id: event.id,
        });
        return;
      }
      if (error instanceof PluginTimeout) await this.outlive(event, error);
      await this.fail(event, owner, previous, error);
    }
  }

  /**
   * A timed-out action may still be running. The event stays claimed (the manager's
   * heartbeat goes on renewing it) until the action has really stopped, and the failure
   * is recorded only then, so its retry never overlaps it.
   */
  private async outlive(event: LeaseEvent, timeout: PluginTimeout): Promise<void> {
    this.logger.warn({
      msg: `${event.eventType} timed out; the retry waits until the action stops`,
      event_id: event.id,
      lease_id: event.leaseId,
      reason: timeout.message,
    });
    await timeout.settled;
  }

  /**
   * Checks and sets the lease's transitional status; null when there is nothing to do.
   * Two round trips: BEGIN goes with the lock, COMMIT with the status and the read.
   */
  private async begin(
    event: LeaseEvent,
  ): Promise<{ lease: Lease; reservations: Reservation[]; previous: LeaseStatus } | null> {
    return withFramedTransaction(this.dataSource, async (tx) => {
      const lease = await this.leases.lock(tx, event.leaseId);
      if (lease === null) throw new ClaimLost(`lease ${event.leaseId} is gone`);
      const step = STEPS[event.eventType];
      if (step.skip.includes(lease.status)) return null;
      if (!mayRun(step, lease.status)) {
        const reason = `lease is ${lease.status}, not ready for ${event.eventType}`;
        // Its start is still waiting (e.g. for a host to boot): wait with it, uncounted.
        if (event.eventType === 'before_end_lease' && lease.status === 'PENDING') {
          throw new ResourceBusy(reason);
        }
        throw new NotReady(reason);
      }
      const previous = lease.status;
      const during = step.during !== null && lease.status !== step.during ? step.during : null;
      const commit = { commit: true };
      if (during === null) {
        return {
          lease,
          reservations: await this.leases.reservationsOf(tx, lease.id, commit),
          previous,
        };
      }
      lease.status = during;
      const now = this.clock.now();
      const reservations = await this.leases.enterStatus(tx, lease.id, during, now, commit);
      return { lease, reservations, previous };
    });
  }

  /** Runs the event's actions; returns the reservations a start started, to record. */
  private async act(type: EventType, lease: Lease, reservations: Reservation[]): Promise<string[]> {
    if (type === 'start_lease') return this.actions.start(lease, reservations);
    if (type === 'end_lease') await this.actions.end(lease, reservations);
    else await this.actions.beforeEnd(lease, reservations);
    return [];
  }

  /**
   * Marks the event DONE (and the reservations it started active) and settles the lease
   * in the status its parts now derive, with its notification: BEGIN goes with the lock,
   * COMMIT with the notification.
   */
  private async complete(event: LeaseEvent, owner: string, started: string[] = []): Promise<void> {
    let doneAt = this.clock.now();
    await withFramedTransaction(this.dataSource, async (tx) => {
      const now = this.clock.now();
      doneAt = now;
      const lease = await this.leases.lock(tx, event.leaseId);
      if (lease === null) throw new ClaimLost(`lease ${event.leaseId} is gone`);
      // The started reservations are recorded active by the same statement.
      const activate =
        started.length > 0 ? (p: SqlParams) => this.actions.activateSql(p, started) : undefined;
      await this.events.finish(tx, event, owner, { status: 'DONE' }, now, activate);
      const notification = `lease.event.${event.eventType}` as const;
      const parts = await this.leases.parts(tx, lease);
      if (event.eventType === 'before_end_lease') {
        await this.notifier.add(tx, notification, parts, { commit: true });
        return;
      }
      const status = deriveStableStatus({
        reservations: parts.reservations.map((r) => r.status),
        startEvent: parts.events.find((e) => e.eventType === 'start_lease')?.status ?? 'DONE',
        endEvent: parts.events.find((e) => e.eventType === 'end_lease')?.status ?? 'UNDONE',
      });
      // The status is set by the notification's statement, which commits.
      await this.notifier.add(
        tx,
        notification,
        { ...parts, lease: Object.assign(lease, { status, updatedAt: now }) },
        { commit: true, with: (p) => setStatusSql(p, lease.id, status, now) },
      );
      this.logger.log({ msg: `${event.eventType} done`, lease_id: lease.id, status });
    });
    // Counted once committed: a lost claim is the other manager's to count.
    this.metrics.events.inc({ type: event.eventType, result: 'done' });
    const lag = Math.max(0, doneAt.getTime() - event.time.getTime()) / 1000;
    this.metrics.eventLag.observe({ type: event.eventType }, lag);
  }

  /**
   * A failed attempt: retried with backoff while attempts remain, the lease back in the
   * status it had; then ERROR, with the reason on the event and the lease in ERROR.
   */
  private async fail(
    event: LeaseEvent,
    owner: string,
    previous: LeaseStatus | null,
    error: unknown,
  ): Promise<void> {
    const reason = error instanceof Error ? error.message : String(error);
    // Waiting for a busy resource costs no attempt.
    const waiting = isResourceBusy(error);
    const final = !waiting && event.attempts >= this.config.eventMaxAttempts;
    const now = this.clock.now();
    try {
      await withTransaction(this.dataSource, async (tx) => {
        const lease = await this.leases.lock(tx, event.leaseId);
        if (lease === null) throw new ClaimLost(`lease ${event.leaseId} is gone`);
        if (!final) {
          const retryAt = new Date(
            now.getTime() +
              (waiting
                ? WAIT_RETRY_POLLS * this.config.eventPollMs
                : retryDelayMs(event.attempts, this.config.eventPollMs)),
          );
          await this.events.finish(
            tx,
            event,
            owner,
            { status: 'UNDONE', error: reason, retryAt, uncounted: waiting },
            now,
          );
          if (previous !== null && previous !== lease.status) {
            await tx.update(Lease, { id: lease.id }, { status: previous, updatedAt: now });
          }
          return;
        }
        await this.events.finish(tx, event, owner, { status: 'ERROR', error: reason }, now);
        const unfinished = event.eventType === 'start_lease' ? ['pending'] : ['active', 'pending'];
        if (event.eventType !== 'before_end_lease') {
          const { reservations } = await this.leases.parts(tx, lease);
          const ids = reservations.filter((r) => unfinished.includes(r.status)).map((r) => r.id);
          for (const id of ids)
            await tx.update(Reservation, { id }, { status: 'error', updatedAt: now });
        }
        await tx.update(Lease, { id: lease.id }, { status: 'ERROR', updatedAt: now });
      });
      this.metrics.events.inc({ type: event.eventType, result: final ? 'failed' : 'retried' });
      const log = { event_id: event.id, lease_id: event.leaseId, attempt: event.attempts, reason };
      if (final) this.logger.error({ msg: `${event.eventType} failed for good`, ...log });
      else this.logger.warn({ msg: `${event.eventType} failed; will retry`, ...log });
    } catch (inner) {
      if (inner instanceof ClaimLost) return;
      throw inner;
    }
  }
}
