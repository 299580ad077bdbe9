import { Inject, Injectable } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { formatWireDate, LATEST_DATE, parseInputDate } from '../common/dates.js';
import { parseDuration } from '../common/durations.js';
import { InvalidInput, NotFound } from '../common/errors.js';
import { allocationsByHost } from './host-usage.js';
import { matchingHostIds } from './hosts.repository.js';
import { ownerOf } from '../model/lease-tables.js';
import { capacityPlan } from './capacity-plan.js';
import { PowerReadiness } from './power-readiness.js';
import { combine, HostQueryBuilder } from '../requirements/host-query.js';
import { isUuid } from '../common/ids.js';
import type { Identity } from '../common/auth/identity.js';
import { Policy, type Owner } from '../common/auth/policy.js';
import { PolicyNotAuthorized } from '../common/errors.js';
import type { AllocatedReservation, AllocationResponse } from './dto/allocation.dto.js';
import type { AvailabilityBody, CapacityBody } from './dto/capacity.dto.js';

export interface AllocationFilter {
  lease_id?: string;
  reservation_id?: string;
  host_id?: number;
  start?: string;
  end?: string;
}

const MAX_STEPS = 2000;
function uuidOrNull(name: string, value: unknown): string | null {
  if (value === undefined || value === '') return null;
  if (!isUuid(value)) throw new InvalidInput(`${name} must be an id`);
  return value;
}

function positive(name: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new InvalidInput(`${name} must be a whole number from 1 to ${max}`);
  }
  return n;
}

/** Allocations (Blazar's shape), the capacity plan and earliest availability. */
@Injectable()
export class AllocationsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly queries: HostQueryBuilder,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly readiness: PowerReadiness,
    private readonly policy: Policy,
  ) {}

  /**
   * The allocations a caller may see. With blazar:oshosts:get_allocations: every host,
   * and entries of leases it may not see (blazar:leases:get) anonymous. Without it: only
   * its own lease's, asked for by lease_id or reservation_id, on the hosts holding them.
   */
  async listFor(caller: Identity, filter: AllocationFilter): Promise<AllocationResponse[]> {
    const rule = 'blazar:oshosts:get_allocations';
    if (this.policy.allows(caller, rule)) {
      return this.list(filter, this.policy.allowsEach(caller, 'blazar:leases:get'));
    }
    const owners = await this.ownersAsked(filter);
    const own = (o: Owner | null) =>
      o !== null && this.policy.allows(caller, 'blazar:leases:get', o);
    // Another project's lease gets the same answer as no lease: nothing leaks.
    if (owners.length === 0 || !owners.every(own)) throw new PolicyNotAuthorized(rule);
    const held = await this.list(filter, () => true);
    return held.filter((a) => a.reservations.length > 0);
  }

  async forHostFor(
    caller: Identity,
    hostId: string,
    filter: AllocationFilter,
  ): Promise<AllocationResponse> {
    const id = /^[0-9]{1,9}$/.test(hostId) ? Number(hostId) : null;
    const [allocation] = id === null ? [] : await this.listFor(caller, { ...filter, host_id: id });
    if (allocation === undefined) throw new NotFound('host_id', hostId);
    return allocation;
  }

  /** The owners of the lease and reservation a query names (null for one that does not exist). */
  private async ownersAsked(filter: AllocationFilter): Promise<(Owner | null)[]> {
    const owners: (Owner | null)[] = [];
    const asked = [
      [uuidOrNull('lease_id', filter.lease_id), 'l.id'],
      [uuidOrNull('reservation_id', filter.reservation_id), 'r.id'],
    ] as const;
    for (const [id, column] of asked) {
      if (id === null) continue;
      owners.push(await ownerOf(this.dataSource.manager, column, id));
    }
    return owners;
  }

  /**
   * One entry per host, with the reservations on it (whole-host and instance slots, as
   * Blazar lists both). Without filters: current and
   * future ones; `lease_id` / `reservation_id` drop that bound; `start`/`end` set a window.
   */
  async list(
    filter: AllocationFilter,
    full: (owner: Owner) => boolean = () => true,
  ): Promise<AllocationResponse[]> {
    const now = this.clock.now();
    const leaseId = uuidOrNull('lease_id', filter.lease_id);
    const reservationId = uuidOrNull('reservation_id', filter.reservation_id);
    const start = filter.start ? parseInputDate(filter.start, now) : null;
    const end = filter.end ? parseInputDate(filter.end, now) : null;
    const unbounded = leaseId !== null || reservationId !== null;
    const rows = await allocationsByHost(this.dataSource.manager, {
      leaseId,
      reservationId,
      unbounded,
      now,
      start,
      end,
      hostId: filter.host_id ?? null,
    });
    return rows.map((r) => ({
      resource_id: String(r.host_id),
      hypervisor_hostname: r.name,
      reservations: r.reservations.map((x) => {
        const shown = full({ projectId: x.project_id as string, userId: x.user_id as string });
        const entry: AllocatedReservation = {
          // Another project's entry: when, on which host, and nothing that names it.
          id: shown ? (x.id as string) : null,
          lease_id: shown ? (x.lease_id as string) : null,
          start_date: formatWireDate(new Date(x.start_at as string)),
          end_date: formatWireDate(new Date(x.end_at as string)),
        };
        if (shown && typeof x.slots === 'number') entry.slots = x.slots;
        return entry;
      }),
    }));
  }

  /** The ids of the hosts a requirement matches (GET /v1/os-hosts?resource_properties=). */
  async matchingHostIds(query: Record<string, unknown>): Promise<Set<string> | null> {
    const requirement = combine(query.hypervisor_properties, query.resource_properties);
    if (requirement === null) return null;
    const em = this.dataSource.manager;
    const q = await this.queries.build(em, requirement);
    return new Set((await matchingHostIds(em, q)).map(String));
  }

  async capacity(query: Record<string, unknown>): Promise<CapacityBody> {
    const now = this.clock.now();
    if (query.start === undefined || query.end === undefined) {
      throw new InvalidInput('start and end are required', 'MissingParameter');
    }
    const start = parseInputDate(query.start, now);
    const end = parseInputDate(query.end, now);
    if (end <= start) throw new InvalidInput('end must be later than start');
    const step = parseDuration('step', query.step ?? '1h');
    if ((end.getTime() - start.getTime()) / step > MAX_STEPS) {
      throw new InvalidInput(`At most ${MAX_STEPS} steps; use a larger step`);
    }
    const em = this.dataSource.manager;
    const q = await this.queries.build(
      em,
      combine(query.hypervisor_properties, query.resource_properties),
    );
    const plan = await capacityPlan(em, q, { start, end }, step);
    return {
      capacity: plan.map((p) => ({
        start_date: formatWireDate(p.start),
        end_date: formatWireDate(new Date(Math.min(p.start.getTime() + step, end.getTime()))),
        total: p.total,
        reserved: p.reserved,
        free: p.total - p.reserved,
        out_of_pool: p.outOfPool,
      })),
    };
  }

  async availability(query: Record<string, unknown>): Promise<AvailabilityBody> {
    const now = this.clock.now();
    const count = positive('count', query.count, 1, 100_000);
    const duration = parseDuration('duration', query.duration);
    const limit = positive('limit', query.limit, 5, 100);
    const from = query.start === undefined ? now : parseInputDate(query.start, now);
    if (from.getTime() + duration >= LATEST_DATE.getTime()) {
      throw new InvalidInput('start plus duration must end before 10000-01-01');
    }
    const em = this.dataSource.manager;
    const q = await this.queries.build(
      em,
      combine(query.hypervisor_properties, query.resource_properties),
    );
    // A window is only free if the cleaning time after it is free too.
    const cleaning = this.config.cleaningTimeMinutes * 60_000;
    // Powered-off hosts count from when they could be on and prepared.
    const starts = await this.readiness.earliestStarts(
      em,
      q,
      count,
      duration + cleaning,
      from,
      limit,
    );
    return {
      availability: starts.map((s) => ({
        start_date: formatWireDate(s.start),
        end_date: formatWireDate(new Date(s.start.getTime() + duration)),
        free_hosts: s.free,
      })),
    };
  }
}
