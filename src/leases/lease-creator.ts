import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import type { Identity } from '../common/auth/identity.js';
import { Clock } from '../common/clock.js';
import { parseInputDate } from '../common/dates.js';
import { InvalidInput } from '../common/errors.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { TrustsService } from '../compute/trusts.service.js';
import { sql, SqlParams } from '../database/sql.js';
import { withFramedTransaction } from '../database/framed-transaction.js';
import { pgCode, RETRYABLE, withTransaction } from '../database/transaction.js';
import {
  ProjectLimitsService,
  toSpans,
  type Spans,
} from '../enforcement/project-limits.service.js';
import { rolledBack } from '../enforcement/rolled-back.js';
import { UsageEnforcement } from '../enforcement/usage-enforcement.service.js';
import { NotificationOutbox } from '../notifications/notification-outbox.js';
import { PluginRegistry } from '../plugins/plugin-registry.js';
import { StaleChoice, writeGated, type StatementParts } from '../plugins/prepared-write.js';
import type { PreparedReservation, Window } from '../plugins/resource-plugin.js';
import { Reservation } from '../model/reservation.entity.js';
import type { CreateLeaseDto } from './dto/lease.dto.js';
import type { LeaseResponse } from './dto/lease.response.js';
import { Lease } from '../model/lease.entity.js';
import {
  claimKeySql,
  replayOf,
  requestHash,
  storedReplay,
  storeResponse,
  storeResponseSql,
} from './idempotency.js';
import { beforeEndTime, checkNewWindow } from './lease-rules.js';
import { describeAll, LeaseParts, toLeaseWire } from './lease.mapper.js';
import { newLeaseSql } from '../model/lease-tables.js';
import { toUserEvents } from './user-events.js';
import { CreateCompute } from './create-compute.js';
import { newLease, type PlannedReservation, type Times } from './new-lease.js';

export interface CreateResult {
  lease: LeaseResponse;
  version: number;
  replayed: boolean;
}

/** Attempts of a create's second round, after the framed transaction's own eight. */
const CREATE_RETRIES = 16;

/** The key a create claims: the caller's project, the header, the body's hash. */
interface KeyClaim {
  key: string;
  hash: string;
}

/** Nothing written, for the external service's dry run; or everything, for real. */
interface WriteOptions {
  key?: KeyClaim;
  notify: boolean;
}

/**
 * POST /v1/leases. Everything is checked before the transaction; inside it, in the
 * usual case (one reservation whose plugin can `prepare`), a create is at most three
 * statements: the idempotency key and the project's limit lock, when needed; the
 * plugin's pick, which locks what it chose; and one statement that checks the choice
 * again after the locks and writes the lease, its reservations, allocations, events,
 * notification and stored response, and reads what the project's limits count. BEGIN
 * and COMMIT go with the first and last of them (`inTransaction`), so each statement is
 * one round trip. The exclusion constraint on host_allocations stays the last word on
 * overlaps.
 */
@Injectable()
export class LeaseCreator {
  private readonly logger = new Logger('leases');

  constructor(
    private readonly dataSource: DataSource,
    private readonly plugins: PluginRegistry,
    private readonly trusts: TrustsService,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
    private readonly enforcement: UsageEnforcement,
    private readonly limits: ProjectLimitsService,
    private readonly outbox: NotificationOutbox,
    private readonly compute: CreateCompute,
  ) {}

  async create(
    caller: Identity,
    dto: CreateLeaseDto,
    idempotencyKey?: string,
  ): Promise<CreateResult> {
    const now = this.clock.now();
    const key =
      idempotencyKey === undefined ? undefined : { key: idempotencyKey, hash: requestHash(dto) };
    if (key !== undefined) {
      const replay = await storedReplay(
        this.dataSource.manager,
        caller.projectId,
        key.key,
        key.hash,
        now,
      );
      if (replay !== null) return { lease: replay, version: 0, replayed: true };
    }
    const start = parseInputDate(dto.start_date, now);
    const end = parseInputDate(dto.end_date, now);
    const window = { start, end };
    checkNewWindow(window, now);
    this.enforcement.checkDuration(caller.projectId, window);
    const requested = dto.before_end_date == null ? null : parseInputDate(dto.before_end_date, now);
    const beforeEnd = beforeEndTime(window, requested, this.config.minutesBeforeEndLease);
    const userEvents = toUserEvents(dto.events, now);
    const planned = await Promise.all(
      (dto.reservations ?? []).map((values) => this.plan(values, caller, now)),
    );
    const trustId = planned.some((p) => this.plugins.get(p.type).actsAsUser)
      ? await this.trusts.create(caller)
      : null;
    const times = { ...window, beforeEnd };
    const parts = () => newLease(caller, dto.name, planned, times, trustId, now, userEvents);
    let made: LeaseParts | null = null;
    // The reservations whose compute objects were asked for (made, or begun).
    const attempted: Reservation[] = [];
    try {
      if (this.enforcement.external) {
        // Before the transaction: the service is asked about the hosts a dry run picks
        // (as Blazar's candidates); no transaction stays open across the call.
        const draft = await rolledBack(this.dataSource, async (tx) => {
          const dry = parts();
          await this.write(tx, dry, times, { notify: false });
          return {
            context: this.enforcement.context(dry.lease),
            lease: await this.enforcement.leaseBody(tx, dry.lease, dry.reservations, true),
          };
        });
        if (dto.before_end_date != null) draft.lease.before_end_date = dto.before_end_date;
        await this.enforcement.checkCreate(draft.context, draft.lease);
      }
      made = parts();
      await this.compute.make(made, attempted);
      const result = await this.insert(made, times, key);
      if (result.replayed) await this.compute.undo(made, attempted);
      return result;
    } catch (error) {
      if (made === null) await this.trusts.delete(trustId);
      else await this.compute.undo(made, attempted);
      throw error;
    }
  }

  /** One transaction; or one statement alone, when that is all the create is. */
  private async insert(parts: LeaseParts, times: Times, key?: KeyClaim): Promise<CreateResult> {
    const options = { key, notify: true };
    const lone =
      key === undefined &&
      parts.reservations.length === 0 &&
      !this.limits.limited(parts.lease.projectId);
    const write = (tx: EntityManager) => this.write(tx, parts, times, options);
    const result = lone ? await write(this.dataSource.manager) : await this.inTransaction(write);
    if (result.replayed) return result;
    const { lease } = parts;
    this.logger.log({ msg: 'lease created', lease_id: lease.id, project_id: lease.projectId });
    return result;
  }

  /**
   * Framed: BEGIN goes with the first statement and COMMIT with the last (two round trips
   * fewer). A choice that went stale there (a race, rare) is made again in a classic
   * transaction, where `again` picks around the loss with the first locks still held.
   */
  private async inTransaction<T>(fn: (tx: EntityManager) => Promise<T>): Promise<T> {
    try {
      return await withFramedTransaction(this.dataSource, fn);
    } catch (error) {
      // Creates racing for the same free hosts lose in turn (each retry picks the next
      // host the winners took): they go on here, so a client sees a 409 only when the
      // race outlasts both rounds of retries.
      if (!(error instanceof StaleChoice) && !RETRYABLE.has(pgCode(error) ?? '')) throw error;
      return withTransaction(this.dataSource, fn, CREATE_RETRIES);
    }
  }

  /** Writes the lease in `tx`: see the class. */
  private async write(
    tx: EntityManager,
    parts: LeaseParts,
    window: Window,
    options: WriteOptions,
  ): Promise<CreateResult> {
    const { lease, reservations } = parts;
    const limited = this.limits.limited(lease.projectId);
    if (options.key !== undefined || limited) {
      const replay = await this.claim(tx, lease, options.key, limited);
      if (replay !== null) return { lease: replay, version: 0, replayed: true };
    }
    const plugins = reservations.map((r) => this.plugins.get(r.resourceType));
    if (reservations.length > 1 || plugins.some((p) => p.prepare === undefined)) {
      return this.writeInSteps(tx, parts, window, options);
    }
    const prepared: PreparedReservation[] = [];
    for (const [i, plugin] of plugins.entries()) {
      prepared.push(await plugin.prepare!(tx, reservations[i], window));
    }
    const details = new Map(
      reservations.flatMap((r, i) => {
        const d = prepared[i].details;
        return d === undefined ? [] : [[r.id, d] as const];
      }),
    );
    const wire = toLeaseWire(parts, this.plugins, details);
    // COMMIT goes with the write only when the write is the unit's one change: limits are
    // checked after it, and a claimed key must not be committed without its lease (a
    // stale choice there would leave the key answering an empty lease).
    const written = await writeGated<Spans>(
      tx,
      prepared,
      (p, go) => this.leaseSql(p, go, parts, wire, options, limited),
      !limited && options.key === undefined,
    );
    if (limited) {
      const own = written.prepared.flatMap((r) =>
        Array.from({ length: r.hosts }, () => ({ leaseId: lease.id, ...window })),
      );
      this.limits.evaluate(lease.projectId, lease.id, window, [...toSpans(written.row), ...own]);
    }
    return { lease: wire, version: lease.version, replayed: false };
  }

  /** The lease's part of the create's statement. */
  private leaseSql(
    p: SqlParams,
    go: string,
    parts: LeaseParts,
    wire: LeaseResponse | null,
    options: WriteOptions,
    limited: boolean,
  ): StatementParts {
    const { lease } = parts;
    const ctes = newLeaseSql(p, parts, go);
    const columns: string[] = [];
    if (wire !== null && options.notify) {
      ctes.push(`o AS (${this.outbox.addWireSql(p, 'lease.create', wire, go)})`);
    }
    if (wire !== null && options.key !== undefined) {
      ctes.push(`k AS (${storeResponseSql(p, lease.projectId, options.key.key, wire, go)})`);
    }
    if (limited) {
      const window = { start: lease.startAt, end: lease.endAt };
      ctes.push(`sp AS (SELECT ${this.limits.spansSql(p, lease.projectId, window)})`);
      columns.push(
        '(SELECT lease_ids FROM sp) AS lease_ids',
        '(SELECT starts FROM sp) AS starts',
        '(SELECT ends FROM sp) AS ends',
      );
    }
    return { ctes, columns };
  }

  /**
   * The first statement, when needed: claims the idempotency key and takes the project's
   * limit lock (so that the statement that counts sees racing creates). Returns the
   * stored response when another request holds the key.
   */
  private async claim(
    tx: EntityManager,
    lease: Lease,
    key: KeyClaim | undefined,
    limited: boolean,
  ): Promise<LeaseResponse | null> {
    const p = new SqlParams();
    const columns: string[] = [];
    let text = '';
    if (key !== undefined) {
      const claim = claimKeySql(p, lease.projectId, key.key, key.hash, lease.createdAt);
      text = `WITH k AS (${claim}) `;
      columns.push('(SELECT count(*) FROM k)::int AS claimed');
    }
    if (limited) columns.push(`${this.limits.lockSql(p, lease.projectId)} AS locked`);
    const { rows } = await sql<{ claimed?: number }>(
      tx,
      `${text}SELECT ${columns.join(', ')}`,
      p.values,
      { prepare: true },
    );
    if (key === undefined || rows[0].claimed === 1) return null;
    return replayOf(tx, lease.projectId, key.key, key.hash);
  }

  /**
   * Several reservations, or a plugin without `prepare`: the lease and its reservations
   * first, then each reservation's prepared write (or its plugin's `reserve`) in turn, each
   * seeing what the others took.
   */
  private async writeInSteps(
    tx: EntityManager,
    parts: LeaseParts,
    window: Window,
    options: WriteOptions,
  ): Promise<CreateResult> {
    const { lease } = parts;
    await writeGated(tx, [], (p, go) => ({ ctes: newLeaseSql(p, parts, go), columns: [] }));
    for (const reservation of parts.reservations) {
      const plugin = this.plugins.get(reservation.resourceType);
      if (plugin.prepare === undefined) await plugin.reserve?.(tx, reservation, window);
      else await writeGated(tx, [await plugin.prepare(tx, reservation, window)]);
    }
    await this.enforcement.checkProjectLimits(tx, lease, window);
    const wire = toLeaseWire(parts, this.plugins, await describeAll(tx, [parts], this.plugins));
    if (options.notify) await this.outbox.addWire(tx, 'lease.create', wire);
    if (options.key !== undefined) {
      await storeResponse(tx, lease.projectId, options.key.key, wire);
    }
    return { lease: wire, version: lease.version, replayed: false };
  }

  private async plan(
    values: Record<string, unknown>,
    caller: Identity,
    now: Date,
  ): Promise<PlannedReservation> {
    const type = values.resource_type;
    if (type === undefined || type === null || type === '') {
      throw new InvalidInput('Missing parameter resource_type', 'MissingParameter');
    }
    if (typeof type !== 'string') throw new InvalidInput('Malformed parameter resource_type');
    const rest = { ...values };
    delete rest.resource_type;
    const params = await this.plugins
      .get(type)
      .validate(rest, { projectId: caller.projectId, now });
    return { type, params };
  }
}
