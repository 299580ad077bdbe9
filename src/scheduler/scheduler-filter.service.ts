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

/** Hosts that share a pool share a verdict: the query returns one row per pool. */
interface PoolGroup {
  pool: string | null;
  kind: string | null;
  metadata: Record<string, unknown> | null;
  names: string;
}

function strings(name: string, value: unknown): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((v) => typeof v === 'string')) {
    throw new InvalidInput(`${name} must be a string or a list of strings`);
  }
  return list;
}

function truthy(value: unknown): boolean {
  return value === true || (typeof value === 'string' && /^(true|1|yes)$/i.test(value));
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
  async filterJson(body: FilterRequest): Promise<Buffer> {
    const bySlots = body.flavor_extra_specs !== undefined && body.flavor_extra_specs !== null;
    const byServer = typeof body.instance_uuid === 'string';
    if ((body.hosts !== undefined && body.hosts !== null) || bySlots || byServer) {
      return Buffer.from(JSON.stringify(await this.filter(body)));
    }
    const { rows } = await sql<{ version: string }>(
      this.dataSource.manager,
      `SELECT version FROM pool_state WHERE id = 1`,
    );
    const version = rows[0].version;
    const hint = (body.hints as Record<string, unknown> | undefined)?.reservation;
    const key = JSON.stringify([hint ?? null, hint === undefined ? null : body.project_id]);
    const hit = this.cache.get(key);
    if (hit !== undefined && hit.version === version) return hit.body;
    const json = Buffer.from(JSON.stringify(await this.filter(body)));
    if (this.cache.size >= 256) this.cache.clear();
    this.cache.set(key, { version, body: json });
    return json;
  }

  async filter(body: FilterRequest): Promise<FilterAnswer> {
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
      if (answer !== null) return answer;
    }

    // One query; hosts are grouped by pool, names joined with newlines (cheap to parse).
    const { rows } = await sql<PoolGroup>(
      this.dataSource.manager,
      names === null
        ? `SELECT p.name AS pool, p.kind, p.metadata, string_agg(h.hypervisor_hostname, E'\\n' ORDER BY h.id) AS names
             FROM hosts h
             LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ('freepool', 'shared', 'recycle', 'reservation')
             LEFT JOIN aggregates p ON p.id = ah.aggregate_id
            GROUP BY p.id`
        : `SELECT p.name AS pool, p.kind, p.metadata, string_agg(u.n, E'\\n' ORDER BY u.i) AS names
             FROM unnest($1::text[]) WITH ORDINALITY u(n, i)
             LEFT JOIN hosts h ON h.hypervisor_hostname = u.n
             LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind IN ('freepool', 'shared', 'recycle', 'reservation')
             LEFT JOIN aggregates p ON p.id = ah.aggregate_id
            GROUP BY p.id`,
      names === null ? [] : [names],
    );
    const passed: string[] = [];
    const rejected: Record<string, string> = {};
    for (const group of rows) {
      const reason = this.reject(group, project, wanted);
      const members = group.names.split('\n');
      if (reason === null) passed.push(...members);
      else for (const name of members) rejected[name] = reason;
    }
    if (names !== null) {
      const order = new Map(names.map((n, i) => [n, i]));
      passed.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
    }
    return { hosts: passed, rejected };
  }

  private reject(group: PoolGroup, project: string, wanted: string[]): string | null {
    const managed = group.kind !== null && group.kind !== 'shared';
    if (wanted.length === 0) {
      return managed ? 'host is in the reservation pool; a reservation hint is required' : null;
    }
    if (group.kind !== 'reservation' || group.pool === null || !wanted.includes(group.pool)) {
      return `host is not in reservation ${wanted.join(', ')}`;
    }
    const meta = group.metadata ?? {};
    if (meta['blazar:owner'] === project || truthy(meta[project])) return null;
    return `reservation ${group.pool} belongs to another project`;
  }
}
