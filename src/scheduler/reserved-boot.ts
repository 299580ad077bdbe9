import { Injectable } from '@nestjs/common';
import { makeIdentity } from '../common/auth/identity.js';
import { InvalidInput, MissingParameter } from '../common/errors.js';
import { checkLength, findBadInput } from '../common/storable.js';
import { LeasesService } from '../leases/leases.service.js';
import type { FilterRequest } from './scheduler-filter.service.js';
import { isUuid } from '../common/ids.js';

/** The leases' name, project_id and user_id columns: varchar(255). */
const MAX_ID = 255;

/** What Nova's side sends for a boot: the filter's request. */
type BootRequest = FilterRequest;

/** The hints of a boot that asks for its own lease: `reserved=True` and `lease_params`. */
export function wantsReservation(body: BootRequest): boolean {
  const hints = body.hints as Record<string, unknown> | undefined;
  const reserved = hints?.reserved;
  return typeof reserved === 'string' ? /^(true|1|yes)$/i.test(reserved) : reserved === true;
}

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
 * where plain servers go, and the manager shelves it until the start.
 */
@Injectable()
export class ReservedBoot {
  constructor(private readonly leases: LeasesService) {}

  /** Creates (or finds) the lease of a server booted with `reserved=True`. */
  async lease(body: BootRequest): Promise<void> {
    const params = parseLeaseParams((body.hints as Record<string, unknown>).lease_params);
    const server = body.instance_uuid;
    if (!isUuid(server)) {
      throw new InvalidInput('A reserved boot needs the instance_uuid', 'MissingParameter');
    }
    if (typeof body.project_id !== 'string' || body.project_id === '') {
      throw new MissingParameter('project_id');
    }
    // The lease is created here, not through the lease DTO: its columns' sizes apply.
    checkLength('project_id', body.project_id, MAX_ID);
    if (typeof body.user_id === 'string') checkLength('user_id', body.user_id, MAX_ID);
    // Nova asks once for a multi-create: the others would boot without a lease.
    if (body.num_instances !== undefined && body.num_instances !== 1) {
      throw new InvalidInput('A reserved boot makes one server at a time (--min-count 1)');
    }
    const user = typeof body.user_id === 'string' && body.user_id !== '' ? body.user_id : 'nova';
    const caller = makeIdentity(user, body.project_id, ['member']);
    await this.leases.create(
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
}
