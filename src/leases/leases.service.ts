import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { Identity } from '../common/auth/identity.js';
import { Policy } from '../common/auth/policy.js';
import { Clock } from '../common/clock.js';
import { parseInputDate } from '../common/dates.js';
import { Conflict, InvalidInput } from '../common/errors.js';
import { askResync } from '../model/lease-tables.js';
import { withTransaction } from '../database/transaction.js';
import { rolledBack } from '../enforcement/rolled-back.js';
import { UsageEnforcement } from '../enforcement/usage-enforcement.service.js';
import { LeaseNotifier } from './lease-notifier.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { CreateLeaseDto, UpdateLeaseDto } from './dto/lease.dto.js';
import type { LeaseResponse } from './dto/lease.response.js';
import { ListLeasesQuery, SORT_KEYS } from './dto/list-leases.query.js';
import { Lease } from '../model/lease.entity.js';
import { checkVersion } from './lease-rules.js';
import { describeAll, LeaseParts, toLeaseWire } from './lease.mapper.js';
import { LeaseCreator, type CreateResult } from './lease-creator.js';
import { LeaseUpdater } from './lease-updater.js';
import { LeaseFilter, LeasesRepository } from './leases.repository.js';

export type LeaseWire = LeaseResponse;
export type { CreateResult } from './lease-creator.js';

/** Blazar's `before_end_lease.stop`: the update made a done before-end event wait again. */
function beforeEndRearmed(before: LeaseParts, after: LeaseParts): boolean {
  const status = (parts: LeaseParts) =>
    parts.events.find((e) => e.eventType === 'before_end_lease')?.status;
  return status(before) === 'DONE' && status(after) === 'UNDONE';
}

/** Whether an update may change what the lease holds (its dates or reservations). */
function allocates(dto: UpdateLeaseDto): boolean {
  return (
    dto.start_date !== undefined || dto.end_date !== undefined || dto.reservations !== undefined
  );
}

/** Leases read per query when a list is streamed. */
const LIST_PAGE = 500;

@Injectable()
export class LeasesService {
  private readonly logger = new Logger('leases');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: LeasesRepository,
    private readonly plugins: PluginRegistry,
    private readonly updater: LeaseUpdater,
    private readonly clock: Clock,
    private readonly enforcement: UsageEnforcement,
    private readonly notifier: LeaseNotifier,
    private readonly creator: LeaseCreator,
    private readonly policy: Policy,
  ) {}

  /**
   * The leases a caller may see, a page at a time (keyset-paged, whatever the count):
   * a list of every lease (Blazar's CLI asks for no limit) is streamed in bounded
   * memory. Bad parameters throw before the first page.
   */
  async *pages(caller: Identity, query: ListLeasesQuery): AsyncGenerator<LeaseWire[]> {
    const em = this.dataSource.manager;
    const [key, dir = 'asc'] = (query.sort ?? 'created_at').split(':');
    if (!(SORT_KEYS as readonly string[]).includes(key) || !['asc', 'desc'].includes(dir)) {
      throw new InvalidInput(
        `sort must be one of ${SORT_KEYS.join(', ')}, optionally with :asc or :desc`,
      );
    }
    const now = this.clock.now();
    const filter: LeaseFilter = {
      // Non-admins see their own project only, whatever they ask for.
      projectId: caller.isAdmin ? query.project_id : caller.projectId,
      status: query.status,
      endsAfter: query.start === undefined ? undefined : parseInputDate(query.start, now),
      startsBefore: query.end === undefined ? undefined : parseInputDate(query.end, now),
      limit: query.limit,
      sortKey:
        key === 'start_date'
          ? 'start_at'
          : key === 'end_date'
            ? 'end_at'
            : (key as LeaseFilter['sortKey']),
      sortDir: dir === 'desc' ? 'DESC' : 'ASC',
    };
    if (query.marker !== undefined) {
      const marker = await this.repo.find(em, query.marker);
      this.policy.assertCanSee(caller, marker, 'lease_id', query.marker);
      filter.marker = marker;
    }
    // A site rule may narrow what a project sees (e.g. its user's own leases only).
    const visible = this.policy.allowsEach(caller, 'blazar:leases:get');
    let left = query.limit ?? Infinity;
    for (;;) {
      const size = Math.min(LIST_PAGE, left);
      const leases = await this.repo.list(em, { ...filter, limit: size });
      if (leases.length === 0) return;
      const shown = leases.filter(visible);
      const parts = await this.repo.withParts(em, shown);
      const extra = await describeAll(em, parts, this.plugins);
      yield parts.map((p) => toLeaseWire(p, this.plugins, extra));
      left -= leases.length;
      if (leases.length < size || left <= 0) return;
      filter.marker = leases[leases.length - 1];
    }
  }

  async get(caller: Identity, id: string): Promise<{ lease: LeaseWire; version: number }> {
    const em = this.dataSource.manager;
    const lease = await this.visible(em, caller, id);
    return { lease: await this.present(em, lease), version: lease.version };
  }

  create(caller: Identity, dto: CreateLeaseDto, idempotencyKey?: string): Promise<CreateResult> {
    return this.creator.create(caller, dto, idempotencyKey);
  }

  async update(
    caller: Identity,
    id: string,
    dto: UpdateLeaseDto,
    ifMatch?: string,
  ): Promise<{ lease: LeaseWire; version: number }> {
    const external = this.enforcement.external && allocates(dto);
    // The external service is asked about the update as a dry run makes it, before the
    // transaction; the update then applies only to the version it saw.
    const checked = external ? await this.checkUpdate(caller, id, dto, ifMatch) : null;
    const result = await withTransaction(this.dataSource, async (tx) => {
      const lease = await this.repo.lock(tx, id);
      this.policy.assertCanSee(caller, lease, 'lease_id', id);
      this.policy.enforce(caller, 'blazar:leases:put', lease);
      checkVersion(lease, ifMatch);
      if (checked !== null && lease.version !== checked) {
        throw new Conflict(
          `Lease ${id} changed while the external service checked the update; try again`,
        );
      }
      const parts = await this.repo.parts(tx, lease);
      const updated = await this.updater.apply(tx, parts, dto);
      if (allocates(dto)) {
        await this.enforcement.checkProjectLimits(tx, updated, {
          start: updated.startAt,
          end: updated.endAt,
        });
      }
      // Started reservations hand out what they gained (e.g. a new host): the manager
      // does it (within a poll), from the committed rows.
      await askResync(tx, id, this.clock.shared());
      this.logger.log({ msg: 'lease updated', lease_id: id, version: updated.version });
      const after = await this.repo.parts(tx, updated);
      if (beforeEndRearmed(parts, after)) {
        await this.notifier.add(tx, 'lease.event.before_end_lease.stop', after);
      }
      await this.notifier.add(tx, 'lease.update', after);
      return { parts: after, version: updated.version };
    });
    const fresh = await this.repo.parts(this.dataSource.manager, result.parts.lease);
    return { lease: await this.wire(this.dataSource.manager, fresh), version: result.version };
  }

  /** check-update with the lease before and after a rolled-back run; the version seen. */
  private async checkUpdate(
    caller: Identity,
    id: string,
    dto: UpdateLeaseDto,
    ifMatch?: string,
  ): Promise<number> {
    const draft = await rolledBack(this.dataSource, async (tx) => {
      const lease = await this.repo.lock(tx, id);
      this.policy.assertCanSee(caller, lease, 'lease_id', id);
      this.policy.enforce(caller, 'blazar:leases:put', lease);
      checkVersion(lease, ifMatch);
      const version = lease.version;
      const parts = await this.repo.parts(tx, lease);
      const current = await this.enforcement.leaseBody(tx, lease, parts.reservations);
      const context = this.enforcement.context(lease);
      const updated = await this.updater.apply(tx, parts, dto);
      await this.enforcement.checkProjectLimits(tx, updated, {
        start: updated.startAt,
        end: updated.endAt,
      });
      const after = await this.repo.parts(tx, updated);
      const next = await this.enforcement.leaseBody(tx, updated, after.reservations);
      return { context, current, next, version };
    });
    await this.enforcement.checkUpdate(draft.context, draft.current, draft.next);
    return draft.version;
  }

  private async visible(em: EntityManager, caller: Identity, id: string): Promise<Lease> {
    const lease = await this.repo.find(em, id);
    this.policy.assertCanSee(caller, lease, 'lease_id', id);
    return lease;
  }

  private async present(em: EntityManager, lease: Lease): Promise<LeaseWire> {
    return this.wire(em, await this.repo.parts(em, lease));
  }

  private async wire(em: EntityManager, parts: LeaseParts): Promise<LeaseWire> {
    return toLeaseWire(parts, this.plugins, await describeAll(em, [parts], this.plugins));
  }
}
