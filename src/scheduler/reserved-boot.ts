import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { makeIdentity, withImpliedRoles, type Identity } from '../common/auth/identity.js';
import { Clock } from '../common/clock.js';
import { Conflict, InvalidInput, MissingParameter } from '../common/errors.js';
import { isUuid } from '../common/ids.js';
import { checkLength, findBadInput } from '../common/storable.js';
import { waitsForStart } from '../model/lease-tables.js';
import { LeaseDeleter } from '../leases/lease-deleter.js';
import { LeasesService, type CreateResult } from '../leases/leases.service.js';
import { PoolVerdictsRepository } from './pool-verdicts.repository.js';
import {
  SchedulerFilterService,
  type FilterAnswer,
  type FilterRequest,
} from './scheduler-filter.service.js';

/** The leases' name, project_id and user_id columns: varchar(255). */
const MAX_ID = 255;

/** What Nova's side sends for a boot: the filter's request. */
type BootRequest = FilterRequest;

interface LeaseParams {
  name: string;
  start: string;
  end: string;
  before_end?: string;
}

/** `lease_params='{"name": …, "start": "now", "end": "2030-12-1 16:07"}'`, checked. */
export function parseLeaseParams(raw: unknown): LeaseParams {
  if (raw === undefined || raw === null) throw new MissingParameter('lease_params');
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw new InvalidInput('Malformed lease_params: not JSON', 'MalformedParameter');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidInput('Malformed lease_params: not an object', 'MalformedParameter');
  }
  // JSON inside a string: the global input check saw only the outer text.
  const problem = findBadInput(value, 'lease_params');
  if (problem !== null) throw new InvalidInput(`Malformed ${problem}`, 'MalformedParameter');
  const p = value as Record<string, unknown>;
  for (const key of ['name', 'start', 'end']) {
    if (typeof p[key] !== 'string' || p[key] === '') {
      throw new InvalidInput(`Malformed lease_params: ${key} is required`, 'MalformedParameter');
    }
  }
  checkLength('lease_params name', p.name as string, MAX_ID);
  const unknown = Object.keys(p).filter((k) => !['name', 'start', 'end', 'before_end'].includes(k));
  if (unknown.length > 0) {
    throw new InvalidInput(`Malformed lease_params: unknown ${unknown.join(', ')}`);
  }
  return p as unknown as LeaseParams;
}

/**
 * A server booted with `--hint reserved=True --hint lease_params=…` gets a lease of its
 * own: a virtual:instance reservation of that server. The instance uuid is the
 * idempotency key, so however often Nova retries the scheduling there is one lease. A
 * lease that starts now keeps the server on its slot's host; a later one lets it boot
 * where plain servers go (or on a free pool host, see `schedule`), and the manager
 * shelves it until the start.
 */
@Injectable()
export class ReservedBoot {
  private readonly logger = new Logger('scheduler');

  constructor(
    private readonly dataSource: DataSource,
    private readonly leases: LeasesService,
    private readonly deleter: LeaseDeleter,
    private readonly filter: SchedulerFilterService,
    private readonly verdicts: PoolVerdictsRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * The boot's lease, then the hosts it may use. A lease for later boots where plain
   * servers go or, when none of those is asked about (every host reservable), on a free
   * pool host that no lease holds now: the manager shelves and offloads it at once, so
   * the host is as it was. With neither, the lease goes and the boot is refused (409:
   * Nova's NoValidHost, with this message in the scheduler's log).
   */
  async schedule(body: BootRequest, explain: boolean): Promise<FilterAnswer> {
    const caller = this.caller(body);
    const made = await this.lease(body, caller);
    // The hints that asked for the lease are not a reservation hint.
    const hints = Object.fromEntries(
      Object.entries(body.hints as Record<string, unknown>).filter(
        ([k]) => k !== 'reserved' && k !== 'lease_params',
      ),
    );
    // A server whose lease has started goes to its slot's host (the instance plugin's
    // scheduling rule), so the boot that made a lease for now lands on it.
    const answer = await this.filter.filter({ ...body, hints }, explain);
    if (answer.hosts.length > 0 || !(await this.waiting(made.lease.id))) return answer;
    // Checked by the filter: a name or a list of names.
    const asked = body.hosts as string | string[] | null | undefined;
    const names = asked === undefined || asked === null ? null : [asked].flat();
    const free = await this.verdicts.freeNow(this.dataSource.manager, names, this.clock.now());
    if (free.length > 0) {
      if (!explain) return { hosts: free };
      const rejected = Object.assign(
        Object.create(null) as Record<string, string>,
        answer.rejected,
      );
      for (const name of free) delete rejected[name];
      return { hosts: free, rejected };
    }
    await this.deleter.delete(caller, made.lease.id);
    this.logger.warn({
      msg: 'reserved boot has no host until its start; its lease is deleted',
      server_id: body.instance_uuid,
      lease_id: made.lease.id,
    });
    throw new Conflict(
      `No host can take server ${String(body.instance_uuid)} until its lease starts: ` +
        `every candidate host is reserved and held by a lease now. ` +
        `Lease ${made.lease.id} is deleted`,
      'NotEnoughHostsAvailable',
    );
  }

  /** Creates (or finds) the lease of a server booted with `reserved=True`. */
  async lease(body: BootRequest, caller = this.caller(body)): Promise<CreateResult> {
    const params = parseLeaseParams((body.hints as Record<string, unknown>).lease_params);
    const server = body.instance_uuid as string;
    // Nova asks once for a multi-create: the others would boot without a lease.
    if (body.num_instances !== undefined && body.num_instances !== 1) {
      throw new InvalidInput('A reserved boot makes one server at a time (--min-count 1)');
    }
    return this.leases.create(
      caller,
      {
        name: params.name,
        start_date: params.start,
        end_date: params.end,
        ...(params.before_end === undefined ? {} : { before_end_date: params.before_end }),
        reservations: [{ resource_type: 'virtual:instance', resource_id: server }],
      },
      `nova-instance:${server}`,
    );
  }

  /** The boot's project and user, checked: its lease is theirs. */
  private caller(body: BootRequest): Identity {
    if (!isUuid(body.instance_uuid)) {
      throw new InvalidInput('A reserved boot needs the instance_uuid', 'MissingParameter');
    }
    if (typeof body.project_id !== 'string' || body.project_id === '') {
      throw new MissingParameter('project_id');
    }
    // The lease is created here, not through the lease DTO: its columns' sizes apply.
    checkLength('project_id', body.project_id, MAX_ID);
    if (typeof body.user_id === 'string') checkLength('user_id', body.user_id, MAX_ID);
    const user = typeof body.user_id === 'string' && body.user_id !== '' ? body.user_id : 'nova';
    // A member of the project, with the reader role Keystone would imply (the policy rules).
    return makeIdentity(user, body.project_id, withImpliedRoles(['member']));
  }

  /** Whether the lease is still there and waits for a start to come. */
  private async waiting(leaseId: string): Promise<boolean> {
    return waitsForStart(this.dataSource.manager, leaseId, this.clock.now());
  }
}
