import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { InvalidInput } from '../common/errors.js';
import { isNames } from './dto/filter.dto.js';
import { sql } from '../database/sql.js';
import {
  PoolVerdictsRepository,
  type PoolGroup,
  type Verdict,
} from './pool-verdicts.repository.js';
import {
  SCHEDULING_RULES,
  type FilterAnswer,
  type SchedulingRequest,
  type SchedulingRule,
} from '../plugins/scheduling.js';

export interface FilterRequest {
  hosts?: unknown;
  project_id?: unknown;
  user_id?: unknown;
  instance_uuid?: unknown;
  num_instances?: unknown;
  hints?: unknown;
  flavor_extra_specs?: unknown;
}

export type { FilterAnswer } from '../plugins/scheduling.js';

function strings(name: string, value: unknown): string[] {
  if (!isNames(value)) throw new InvalidInput(`${name} must be a string or a list of strings`);
  return typeof value === 'string' ? [value] : value;
}

/**
 * Blazar's Nova filter as a service: without a reservation hint no host of the
 * reservation pool passes; with `reservation=<id>` only the hosts of that started
 * reservation pass, and only for its project or its extra projects.
 */
@Injectable()
export class SchedulerFilterService {
  /** Whole-fleet answers (no host list), by request, valid for one pool_state version. */
  private readonly cache = new Map<string, { version: string; body: Buffer }>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly verdicts: PoolVerdictsRepository,
    @Inject(SCHEDULING_RULES) private readonly rules: SchedulingRule[],
  ) {}

  /**
   * The answer as JSON bytes. A request over every host is answered from the cache while
   * no host or pool has changed since (one cheap query to check), since that answer is
   * large and the same for every caller without a hint.
   */
  async filterJson(body: FilterRequest, explain = false): Promise<Buffer> {
    const bySlots = body.flavor_extra_specs !== undefined && body.flavor_extra_specs !== null;
    const byServer = typeof body.instance_uuid === 'string';
    if ((body.hosts !== undefined && body.hosts !== null) || bySlots || byServer) {
      return Buffer.from(JSON.stringify(await this.filter(body, explain)));
    }
    // Prepared: pool_state is a view summing its 64 shards, planned once per connection.
    const { rows } = await sql<{ version: string }>(
      this.dataSource.manager,
      `SELECT version FROM pool_state WHERE id = 1`,
      [],
      { prepare: true },
    );
    const version = rows[0].version;
    const hint = (body.hints as Record<string, unknown> | undefined)?.reservation;
    const key = JSON.stringify([
      hint ?? null,
      hint === undefined ? null : body.project_id,
      explain,
    ]);
    const hit = this.cache.get(key);
    if (hit !== undefined && hit.version === version) return hit.body;
    const json = Buffer.from(JSON.stringify(await this.filter(body, explain)));
    if (this.cache.size >= 256) this.cache.clear();
    this.cache.set(key, { version, body: json });
    return json;
  }

  /**
   * The passing hosts, for a request FilterRequestBody passed (a reserved boot's project:
   * ReservedBoot checked it); with `explain`, also why each other one does not pass. The cost
   * follows the request: the hosts it names, or the hinted pools, not the fleet.
   */
  async filter(body: FilterRequest, explain = false): Promise<FilterAnswer> {
    const project = body.project_id as string;
    const hint = (body.hints as { reservation?: unknown } | null | undefined)?.reservation;
    const wanted = hint === undefined ? [] : strings('hints.reservation', hint);
    // The host list is not in FilterRequestBody (FilterHosts): it is checked here.
    const names =
      body.hosts === undefined || body.hosts === null ? null : strings('hosts', body.hosts);
    const specs = body.flavor_extra_specs ?? {};
    // A request for a reservation of a resource type's own is that type's to answer.
    const request: SchedulingRequest = {
      names,
      projectId: project,
      flavorExtraSpecs: specs as Record<string, unknown>,
      instanceUuid: typeof body.instance_uuid === 'string' ? body.instance_uuid : null,
    };
    for (const rule of this.rules) {
      const answer = await rule.schedule(this.dataSource.manager, request);
      if (answer !== null) return explain ? { rejected: {}, ...answer } : { hosts: answer.hosts };
    }
    const em = this.dataSource.manager;
    if (names !== null) return this.named(em, names, project, wanted, explain);
    if (!explain) return { hosts: await this.verdicts.everyPassing(em, project, wanted) };
    return answer(await this.verdicts.everyGrouped(em, project, wanted), wanted);
  }

  /**
   * The named hosts that pass, in the order asked (repeats kept); with `explain`, why each
   * other one does not. Costs an index probe per name, whatever the fleet, while the
   * names are few beside it (PROBED_NAMES); a hash join of the hosts past that.
   */
  private async named(
    em: EntityManager,
    names: string[],
    project: string,
    wanted: string[],
    explain: boolean,
  ): Promise<FilterAnswer> {
    if (names.length === 0) return explain ? { hosts: [], rejected: {} } : { hosts: [] };
    if (!explain) return { hosts: await this.verdicts.namedPassing(em, names, project, wanted) };
    const groupOf = new Map<string, PoolGroup>();
    for (const group of await this.verdicts.namedGroups(em, names, project, wanted)) {
      for (const name of group.names) groupOf.set(name, group);
    }
    const hosts: string[] = [];
    const rejected = reasons();
    for (const name of names) {
      const group = groupOf.get(name);
      if (group === undefined) throw new Error(`host ${name} has no verdict`);
      if (group.verdict === 'pass') hosts.push(name);
      else rejected[name] = reason(group.verdict, group.pool, wanted);
    }
    return { hosts, rejected };
  }
}

/** Every host's verdict as the answer: the passing group's names, the others' reasons. */
function answer(groups: PoolGroup[], wanted: string[]): FilterAnswer {
  const hosts: string[] = [];
  const rejected = reasons();
  for (const group of groups) {
    for (const name of group.names) {
      // One push a name: spreading a fleet of names into push() overflows the stack.
      if (group.verdict === 'pass') hosts.push(name);
      else rejected[name] = reason(group.verdict, group.pool, wanted);
    }
  }
  return { hosts, rejected };
}

/** Host name -> reason, with no prototype, so a host called `__proto__` is a key too. */
function reasons(): Record<string, string> {
  return Object.create(null) as Record<string, string>;
}

function reason(verdict: Verdict, pool: string | null, wanted: string[]): string {
  switch (verdict) {
    case 'pooled':
      return 'host is in the reservation pool; a reservation hint is required';
    case 'elsewhere':
      return `host is not in reservation ${wanted.join(', ')}`;
    default:
      return `reservation ${pool} belongs to another project`;
  }
}
