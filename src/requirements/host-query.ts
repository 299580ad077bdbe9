import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { compileRequirements, parseRequirements, type Requirement } from './requirements.js';

/** Which hosts a request may use: a compiled requirement and the topology placement. */
export interface HostQuery {
  /** SQL boolean over `h` (hosts); placeholders number from $1 of `params`. */
  where: string;
  params: unknown[];
  affinity?: string | null;
  antiAffinity?: string | null;
  /**
   * Picks walk hosts cheapest first (placement_cost, HOST_WEIGHTS) unless false: a request
   * that asks about a weighted property walks them in id order, since every candidate
   * then has it, and the cheap hosts first would all be walked past.
   */
  cheapestFirst?: boolean;
}

/** Query-language columns of the hosts table (see requirements.ts). */
export const HOST_QUERY_COLUMNS = {
  id: { sql: 'h.id', type: 'number' },
  vcpus: { sql: 'h.vcpus', type: 'number' },
  memory_mb: { sql: 'h.memory_mb', type: 'number' },
  local_gb: { sql: 'h.local_gb', type: 'number' },
  hypervisor_version: { sql: 'h.hypervisor_version', type: 'number' },
  hypervisor_hostname: { sql: 'h.hypervisor_hostname', type: 'text' },
  hypervisor_type: { sql: 'h.hypervisor_type', type: 'text' },
  service_name: { sql: 'h.service_name', type: 'text' },
  availability_zone: { sql: 'h.availability_zone', type: 'text' },
  cpu_info: { sql: 'h.cpu_info', type: 'text' },
  reservable: { sql: 'h.reservable', type: 'boolean' },
} as const;

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
  constructor(@Inject(CONFIG) private readonly config: Config) {}

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
    const weighted = params.some((v) => typeof v === 'string' && this.config.hostWeights.has(v));
    return { where, params, ...placement, cheapestFirst: !weighted };
  }
}
