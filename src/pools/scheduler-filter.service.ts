import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InvalidInput } from '../common/errors.js';
import type { JsonObject } from '../common/json.js';
import { sql } from '../database/sql.js';

export interface FilterRequest {
  hosts?: unknown;
  project_id?: unknown;
  hints?: unknown;
  flavor_extra_specs?: unknown;
}

interface Row {
  name: string;
  pool: string | null;
  kind: string | null;
  metadata: Record<string, unknown> | null;
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
  constructor(private readonly dataSource: DataSource) {}

  async filter(body: FilterRequest): Promise<JsonObject> {
    if (typeof body.project_id !== 'string' || body.project_id === '') {
      throw new InvalidInput('Missing parameter project_id', 'MissingParameter');
    }
    const project = body.project_id;
    const hints = (body.hints ?? {}) as Record<string, unknown>;
    if (typeof hints !== 'object' || hints === null)
      throw new InvalidInput('hints must be an object');
    const wanted =
      hints.reservation === undefined ? [] : strings('hints.reservation', hints.reservation);
    const names =
      body.hosts === undefined || body.hosts === null ? null : strings('hosts', body.hosts);

    const { rows } = await sql<Row>(
      this.dataSource.manager,
      `WITH asked AS (
         SELECT n AS name FROM unnest($1::text[]) n WHERE $1::text[] IS NOT NULL
         UNION ALL SELECT hypervisor_hostname FROM hosts WHERE $1::text[] IS NULL)
       SELECT s.name, p.name AS pool, p.kind, p.metadata
         FROM asked s
         LEFT JOIN hosts h ON h.hypervisor_hostname = s.name
         LEFT JOIN aggregate_hosts ah ON ah.host_id = h.id AND ah.kind <> 'topology'
         LEFT JOIN aggregates p ON p.id = ah.aggregate_id`,
      [names],
    );
    const passed: string[] = [];
    const rejected: Record<string, string> = {};
    for (const row of rows) {
      const reason = this.reject(row, project, wanted);
      if (reason === null) passed.push(row.name);
      else rejected[row.name] = reason;
    }
    return { hosts: passed, rejected };
  }

  private reject(row: Row, project: string, wanted: string[]): string | null {
    const managed = row.kind !== null && row.kind !== 'shared';
    if (wanted.length === 0) {
      return managed ? 'host is in the reservation pool; a reservation hint is required' : null;
    }
    if (row.kind !== 'reservation' || row.pool === null || !wanted.includes(row.pool)) {
      return `host is not in reservation ${wanted.join(', ')}`;
    }
    const meta = row.metadata ?? {};
    if (meta['blazar:owner'] === project || truthy(meta[project])) return null;
    return `reservation ${row.pool} belongs to another project`;
  }
}
