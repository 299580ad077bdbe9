import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import type { HostQuery } from './allocations.repository.js';
import { HOST_QUERY_COLUMNS } from './host-fields.js';
import { compileRequirements, parseRequirements, type Requirement } from './requirements.js';

export const HOST_RESOURCE_TYPE = 'physical:host';

/** Both requirement strings of a request, ANDed, as Blazar does. */
export function combine(...inputs: unknown[]): Requirement | null {
  const parts = inputs.map((i) => parseRequirements(i)).filter((r): r is Requirement => r !== null);
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0] : { op: 'and', args: parts };
}

/** Compiles requirements against the hosts table, checking property names exist. */
@Injectable()
export class HostQueryBuilder {
  async knownProperties(em: EntityManager): Promise<Set<string>> {
    const { rows } = await sql<{ property_name: string }>(
      em,
      `SELECT property_name FROM resource_properties WHERE resource_type = $1`,
      [HOST_RESOURCE_TYPE],
    );
    return new Set(rows.map((r) => r.property_name));
  }

  async build(
    em: EntityManager,
    requirement: Requirement | null,
    placement: { affinity?: string | null; antiAffinity?: string | null } = {},
  ): Promise<HostQuery> {
    const params: unknown[] = [];
    const knownProperties =
      requirement === null ? new Set<string>() : await this.knownProperties(em);
    const where = compileRequirements(requirement, {
      columns: HOST_QUERY_COLUMNS,
      capabilities: 'h.capabilities',
      knownProperties,
      params,
    });
    return { where, params, ...placement };
  }
}
