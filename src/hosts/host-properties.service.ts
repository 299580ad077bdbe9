import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { formatTimestamp } from '../common/dates.js';
import { NotFound } from '../common/errors.js';
import { columns, sql } from '../database/sql.js';
import { hostsWith } from '../pools/hosts.repository.js';
import { HOST_RESOURCE_TYPE } from '../requirements/host-query.js';
import type { HostPropertyResponse, HostPropertySummary } from './dto/host-property.dto.js';

/** Truthy query flags: `detail=True`, `all=1`, … ; `detail=False` is false (Blazar: true). */
export function flag(value: unknown): boolean {
  return typeof value === 'string' && /^(1|true|yes|on)$/i.test(value.trim());
}

/** The catalogue of extra-capability names (Blazar's resource properties). */
@Injectable()
export class HostPropertiesService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  /** Properties are created the first time a capability name is used on any host. */
  async register(tx: EntityManager, names: string[], now: Date): Promise<void> {
    if (names.length === 0) return;
    await sql(
      tx,
      `INSERT INTO resource_properties (resource_type, property_name, private, created_at)
       SELECT $1, n, false, $3 FROM unnest($2::text[]) n
       ON CONFLICT (resource_type, property_name) DO NOTHING`,
      [HOST_RESOURCE_TYPE, names, now],
    );
  }

  /** Properties with at least one value; private ones only when `all` is asked for. */
  async list(detail: boolean, all: boolean): Promise<HostPropertySummary[]> {
    const { rows } = await sql<{ property: string; private: boolean; values: string[] }>(
      this.dataSource.manager,
      `SELECT p.property_name AS property, p.private,
              array_agg(DISTINCT h.capabilities ->> p.property_name ORDER BY h.capabilities ->> p.property_name) AS values
         FROM resource_properties p
         ${hostsWith('h', 'p.property_name')}
        WHERE p.resource_type = $1 AND ($2 OR NOT p.private)
        GROUP BY p.property_name, p.private
        ORDER BY p.property_name`,
      [HOST_RESOURCE_TYPE, all],
    );
    return rows.map((r) =>
      detail
        ? { property: r.property, private: r.private, values: r.values }
        : { property: r.property },
    );
  }

  async setPrivate(name: string, isPrivate: boolean): Promise<HostPropertyResponse> {
    const { rows } = await sql<{
      id: number;
      property_name: string;
      private: boolean;
      created_at: Date;
      updated_at: Date | null;
    }>(
      this.dataSource.manager,
      `UPDATE resource_properties SET private = $3, updated_at = $4
        WHERE resource_type = $1 AND property_name = $2
        RETURNING id, property_name, private, created_at, updated_at`,
      [HOST_RESOURCE_TYPE, name, isPrivate, this.clock.now()],
    );
    const row = rows[0];
    if (row === undefined) throw new NotFound('property_name', name);
    return {
      created_at: formatTimestamp(row.created_at),
      updated_at: formatTimestamp(row.updated_at),
      id: String(row.id),
      resource_type: HOST_RESOURCE_TYPE,
      property_name: row.property_name,
      private: row.private,
    };
  }
}

/* The Blazar importer's bulk rows. */

export interface PropertyRecord {
  property_name: string;
  private: boolean;
  created_at: unknown;
  updated_at: unknown;
}

export async function insertPropertyRows(tx: EntityManager, rows: PropertyRecord[]): Promise<void> {
  await sql(
    tx,
    `INSERT INTO resource_properties (resource_type, property_name, private, created_at, updated_at)
     SELECT 'physical:host', * FROM unnest($1::text[], $2::bool[], $3::timestamptz[], $4::timestamptz[])`,
    columns(rows, ['property_name', 'private', 'created_at', 'updated_at']),
  );
}

/** The hosts' properties with their dates. */
export async function propertyRecords(
  em: EntityManager,
): Promise<
  { property_name: string; private: boolean; created_at: Date; updated_at: Date | null }[]
> {
  const { rows } = await sql<{
    property_name: string;
    private: boolean;
    created_at: Date;
    updated_at: Date | null;
  }>(
    em,
    `SELECT property_name, private, created_at, updated_at FROM resource_properties
      WHERE resource_type = 'physical:host'`,
  );
  return rows;
}
