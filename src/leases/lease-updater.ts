import { Inject, Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { parseInputDate } from '../common/dates.js';
import { Conflict, InvalidInput, InvalidStatus, MissingParameter } from '../common/errors.js';
import type { JsonObject } from '../common/json.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { UsageEnforcement } from '../enforcement/usage-enforcement.service.js';
import { LeaseEvent } from '../model/lease-event.entity.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { Reservation } from '../model/reservation.entity.js';
import { UpdateLeaseDto } from './dto/lease.dto.js';
import { Lease } from '../model/lease.entity.js';
import { isStable } from '../model/lease-status.js';
import { beforeEndTime, LeaseWindow, planDateChange, shiftBeforeEnd } from './lease-rules.js';
import type { LeaseParts } from './lease.mapper.js';
import { toUserEvents } from './user-events.js';

/**
 * `now` ends the lease at this instant (Blazar's terminate-at-any-time; Blazar takes the
 * minute, which refuses a lease started earlier in the same minute); the rest as parsed.
 */
function endDate(value: unknown, now: Date): Date {
  return typeof value === 'string' && value.trim() === 'now' ? now : parseInputDate(value, now);
}

/**
 * Applies a PUT to a locked lease, inside the caller's transaction: everything is checked
 * before the first write, and any error rolls the whole update back, so a refused update
 * changes nothing and the lease keeps its status.
 */
@Injectable()
export class LeaseUpdater {
  constructor(
    private readonly plugins: PluginRegistry,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly enforcement: UsageEnforcement,
  ) {}

  async apply(tx: EntityManager, parts: LeaseParts, dto: UpdateLeaseDto): Promise<Lease> {
    const { lease, events, reservations } = parts;
    const now = this.clock.now();
    const running = events.some(
      (e) => e.status === 'IN_PROGRESS' && e.eventType !== 'before_end_lease',
    );
    if (!isStable(lease.status) || running) {
      throw new InvalidStatus(
        `Lease ${lease.id} is ${lease.status.toLowerCase()}; try again later`,
      );
    }
    this.refuseFixedTypes(reservations, dto);
    const startEvent = events.find((e) => e.eventType === 'start_lease');
    const endEvent = events.find((e) => e.eventType === 'end_lease');
    const current = { start: lease.startAt, end: lease.endAt };
    const window = planDateChange({
      current,
      start: dto.start_date === undefined ? undefined : parseInputDate(dto.start_date, now),
      end: dto.end_date === undefined ? undefined : endDate(dto.end_date, now),
      started: lease.startAt <= now || (startEvent !== undefined && startEvent.status !== 'UNDONE'),
      ended: endEvent !== undefined && endEvent.status !== 'UNDONE',
      now,
    });
    const datesMoved = window !== current;
    if (datesMoved) this.enforcement.checkDuration(lease.projectId, window);
    const requestedBeforeEnd =
      dto.before_end_date == null ? null : parseInputDate(dto.before_end_date, now);
    const changes = this.reservationChanges(lease, reservations, dto.reservations ?? []);
    // A list replaces the user-defined events (stored, never run); absent keeps them.
    const userEvents = dto.events === undefined ? undefined : toUserEvents(dto.events, now);

    for (const r of reservations) {
      if (r.status !== 'pending' && r.status !== 'active') continue;
      const newParams = changes.get(r.id);
      if (newParams === undefined && !datesMoved) continue;
      if (newParams !== undefined) r.params = newParams;
      r.updatedAt = now;
      await tx.update(Reservation, { id: r.id }, { params: r.params, updatedAt: now });
      await this.plugins.get(r.resourceType).update(tx, r, window);
    }
    if (datesMoved || requestedBeforeEnd !== null) {
      await this.moveEvents(tx, lease, events, window, requestedBeforeEnd, now);
    }
    const patch: Partial<Lease> = {
      name: dto.name ?? lease.name,
      startAt: window.start,
      endAt: window.end,
      version: lease.version + 1,
      updatedAt: now,
      ...(userEvents === undefined
        ? {}
        : { userEvents: userEvents.length === 0 ? null : userEvents }),
    };
    await tx.update(Lease, { id: lease.id }, patch);
    return Object.assign(lease, patch);
  }

  /** A type whose leases cannot change refuses all but a rename, before anything moves. */
  private refuseFixedTypes(reservations: Reservation[], dto: UpdateLeaseDto): void {
    const onlyRename = Object.entries(dto).every(([k, v]) => k === 'name' || v === undefined);
    if (onlyRename) return;
    for (const r of reservations) {
      if (r.status !== 'pending' && r.status !== 'active') continue;
      const refusal = this.plugins.get(r.resourceType).leaseChangeRefusal?.();
      if (refusal !== undefined) throw refusal;
    }
  }

  /** New params per reservation id, validated by each reservation's plugin. */
  private reservationChanges(
    lease: Lease,
    reservations: Reservation[],
    requested: Record<string, unknown>[],
  ): Map<string, JsonObject> {
    const byId = new Map(reservations.map((r) => [r.id, r]));
    const unknown = requested
      .map((values) => values.id)
      .filter((id) => id !== undefined && id !== null && !byId.has(String(id as string)));
    if (requested.some((values) => values.id === undefined || values.id === null)) {
      throw new MissingParameter('reservation ID');
    }
    if (unknown.length > 0) {
      throw new InvalidInput(
        `Please enter valid reservation IDs. Invalid reservation IDs are: ${unknown.join(', ')}`,
      );
    }
    const changes = new Map<string, JsonObject>();
    for (const values of requested) {
      const { id, resource_type: type, ...rest } = values;
      const reservation = byId.get(String(id)) as Reservation;
      if (type !== undefined && type !== reservation.resourceType) {
        throw new Conflict('resource_type cannot be updated', 'CantUpdateParameter');
      }
      if (Object.keys(rest).length === 0) continue;
      const plugin = this.plugins.get(reservation.resourceType);
      changes.set(reservation.id, plugin.validateUpdate(reservation, rest, lease));
    }
    return changes;
  }

  private async moveEvents(
    tx: EntityManager,
    lease: Lease,
    events: LeaseEvent[],
    window: LeaseWindow,
    requestedBeforeEnd: Date | null,
    now: Date,
  ): Promise<void> {
    for (const e of events) {
      let time = e.time;
      if (e.eventType === 'start_lease') time = window.start;
      if (e.eventType === 'end_lease') time = window.end;
      if (e.eventType === 'before_end_lease') {
        time =
          requestedBeforeEnd !== null
            ? (beforeEndTime(window, requestedBeforeEnd, this.config.minutesBeforeEndLease) as Date)
            : shiftBeforeEnd(e.time, lease.endAt, window);
      }
      // A finished before-end event moved into the future runs again.
      const rearm = e.eventType === 'before_end_lease' && e.status === 'DONE' && time > now;
      if (time.getTime() === e.time.getTime() && !rearm) continue;
      await tx.update(
        LeaseEvent,
        { id: e.id },
        {
          time,
          status: rearm ? 'UNDONE' : e.status,
          attempts: rearm ? 0 : e.attempts,
          updatedAt: now,
        },
      );
    }
  }
}
