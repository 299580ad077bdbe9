import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InvalidInput } from '../common/errors.js';
import { sql } from '../database/sql.js';
import {
  SCHEDULING_RULES,
  type FilterAnswer,
  type SchedulingRequest,
  type SchedulingRule,
} from './scheduling.js';

export interface FilterRequest {
  hosts?: unknown;
  project_id?: unknown;
  user_id?: unknown;
  instance_uuid?: unknown;
  num_instances?: unknown;
  hints?: unknown;
  flavor_extra_specs?: unknown;
}

export type { FilterAnswer } from './scheduling.js';

/** What a pool's hosts get: passing, or which refusal (reasons are worded in `reason`). */
type Verdict = 'pass' | 'pooled' | 'elsewhere' | 'foreign';

/** Hosts that share a pool share a verdict: the explained query returns one row per pool. */
interface PoolGroup {
  pool: string | null;
  verdict: Verdict;
  names: string[];
}

const POOL_KINDS = `('freepool', 'shared', 'recycle', 'reservation')`;

/**
 * The verdict of the pool `p` (null: in no pool) for project $1 and hint $2 (text[], empty
 * without a hint), used by both query shapes. Without a hint no host of the reservation
 * pool passes; with one, only the hosts of those reservations, for their project or an
 * extra project (metadata `<project>` true, as Blazar writes it).
 */
const VERDICT = `CASE
    WHEN cardinality($2::text[]) = 0 THEN
      CASE WHEN p.kind IS NULL OR p.kind = 'shared' THEN 'pass' ELSE 'pooled' END
    WHEN p.kind IS DISTINCT FROM 'reservation' OR NOT p.name = ANY($2::text[]) THEN 'elsewhere'
    WHEN p.metadata -> 'blazar:owner' = to_jsonb($1::text)
      OR p.metadata -> $1::text = 'true'::jsonb
      OR (jsonb_typeof(p.metadata -> $1::text) = 'string'
          AND p.metadata ->> $1::text ~* '^(true|1|yes)$') THEN 'pass'
    ELSE 'foreign' END`;

/** The candidates $3 (in the order asked), or every host (by id) when $3 is null. */
function candidates(all: boolean): { from: string; name: string; order: string } {
  return all
    ? { from: 'hosts h', name: 'h.hypervisor_hostname', order: 'h.id' }
    : {
        from: `unnest($3::text[]) WITH ORDINALITY u(n, i)
             LEFT JOIN hosts h ON h.hypervisor_hostname = u.n`,
        name: 'u.n',
        order: 'u.i',
      };
}

function strings(name: string, value: unknown): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((v) => typeof v === 'string')) {
    throw new InvalidInput(`${name} must be a string or a list of strings`);
  }
  return list;
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
    const { rows } = await sql<{ version: string }>(
      this.dataSource.manager,
      `SELECT version FROM pool_state WHERE id = 1`,
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
   * The passing hosts; with `explain`, also why each other one does not pass. Unexplained,
   * the query returns only the passing hosts, so the answer and its cost follow them.
   */
  async filter(body: FilterRequest, explain = false): Promise<FilterAnswer> {
    if (typeof body.project_id !== 'string' || body.project_id === '') {
      throw new InvalidInput('Missing parameter project_id', 'MissingParameter');
    }
    const project = body.project_id;
    const hints = body.hints ?? {};
    if (typeof hints !== 'object' || hints === null || Array.isArray(hints)) {
      throw new InvalidInput('hints must be an object');
    }
    const hint = (hints as Record<string, unknown>).reservation;
    const wanted = hint === undefined ? [] : strings('hints.reservation', hint);
    const names =
      body.hosts === undefined || body.hosts === null ? null : strings('hosts', body.hosts);
    const specs = body.flavor_extra_specs ?? {};
    if (typeof specs !== 'object' || specs === null || Array.isArray(specs)) {
      throw new InvalidInput('flavor_extra_specs must be an object');
    }
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
    return explain ? this.explained(names, project, wanted) : this.passing(names, project, wanted);
  }

  /** Only the hosts that pass; with a hint, the planner starts from the hinted pools. */
  private async passing(
    names: string[] | null,
    project: string,
    wanted: string[],
  ): Promise<FilterAnswer> {
    const c = candidates(names === null);
    // Implied by the verdict with a hint; said again so that the joins become inner ones.
    const hinted =
      wanted.length === 0 ? '' : `AND p.kind = 'reservation' AND p.name = ANY($2::text[])`;
    const { rows } = await sql<{ names: string[] | null }>(
      this.dataSource.manager,
      `SELECT array_agg(${c.name} ORDER BY ${c.order}) AS names
         FROM ${c.from}
         LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS}
         LEFT JOIN aggregates p ON p.id = ah.aggregate_id
        WHERE (${VERDICT}) = 'pass' ${hinted}`,
      names === null ? [project, wanted] : [project, wanted, names],
    );
    return { hosts: rows[0]?.names ?? [] };
  }

  /** Every candidate with its verdict: hosts grouped by pool, one row per pool. */
  private async explained(
    names: string[] | null,
    project: string,
    wanted: string[],
  ): Promise<FilterAnswer> {
    const c = candidates(names === null);
    const { rows } = await sql<PoolGroup>(
      this.dataSource.manager,
      `SELECT p.name AS pool, ${VERDICT} AS verdict, array_agg(${c.name} ORDER BY ${c.order}) AS names
         FROM ${c.from}
         LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ${POOL_KINDS}
         LEFT JOIN aggregates p ON p.id = ah.aggregate_id
        GROUP BY p.id`,
      names === null ? [project, wanted] : [project, wanted, names],
    );
    const passed: string[] = [];
    const rejected: Record<string, string> = {};
    for (const group of rows) {
      if (group.verdict === 'pass') passed.push(...group.names);
      else for (const name of group.names) rejected[name] = reason(group, wanted);
    }
    if (names !== null) {
      const order = new Map(names.map((n, i) => [n, i]));
      passed.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
    }
    return { hosts: passed, rejected };
  }
}

function reason(group: PoolGroup, wanted: string[]): string {
  switch (group.verdict) {
    case 'pooled':
      return 'host is in the reservation pool; a reservation hint is required';
    case 'elsewhere':
      return `host is not in reservation ${wanted.join(', ')}`;
    default:
      return `reservation ${group.pool} belongs to another project`;
  }
}
