import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection, type Connection } from 'mysql2/promise';

/** The machine's MariaDB; each test makes a database of its own on it and drops it. */
export const MARIADB_URL = process.env.TEST_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306';

/** The Blazar databases written by Blazar itself (see its README). */
export const BLAZAR_DB_DIR = join(__dirname, '..', '..', '..', 'shared', 'blazar-db');
export const BLAZAR_DUMP = join(BLAZAR_DB_DIR, 'blazar-acc44dc9.sql');

export interface BlazarDatabase {
  url: string;
  name: string;
  /** A connection on it, for changing rows in a test. */
  query(text: string, values?: unknown[]): Promise<unknown>;
  drop(): Promise<void>;
}

async function admin(database?: string): Promise<Connection> {
  const url = new URL(MARIADB_URL);
  if (database !== undefined) url.pathname = `/${database}`;
  return createConnection({
    uri: url.toString(),
    multipleStatements: true,
    connectTimeout: 10_000,
  });
}

/** A fresh database loaded with `dump` (a mysqldump file). */
export async function loadBlazarDump(dump: string = BLAZAR_DUMP): Promise<BlazarDatabase> {
  const name = `blazar_t_${randomBytes(6).toString('hex')}`;
  const root = await admin();
  try {
    await root.query(`CREATE DATABASE ${name} CHARACTER SET utf8`);
  } finally {
    await root.end();
  }
  const db = await admin(name);
  await db.query(readFileSync(dump, 'utf8'));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    query: async (text, values) => (await db.query(text, values))[0],
    drop: async () => {
      await db.end();
      const c = await admin();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await c.end();
      }
    },
  };
}

/** expected.json: every row of the dump, as Blazar's README describes it. */
export interface ExpectedBlazar {
  hosts: Record<string, unknown>[];
  resource_properties: { property_name: string; private: boolean }[];
  floatingips: {
    id: string;
    floating_network_id: string;
    subnet_id: string;
    floating_ip_address: string;
    reservable: boolean;
    created_at: string;
    updated_at: string | null;
  }[];
  leases: ExpectedLease[];
  derived_at_reference_instant: {
    host_allocations: Record<string, { lease: string; reservation_id: string }[]>;
  };
}

export interface ExpectedLease {
  id: string;
  name: string;
  project_id: string;
  user_id: string;
  trust_id: string;
  status: string;
  degraded: boolean;
  start_date: string;
  end_date: string;
  created_at: string;
  updated_at: string | null;
  reservations: ExpectedReservation[];
  events: {
    id: string;
    event_type: string;
    time: string;
    status: string;
    created_at: string;
    updated_at: string | null;
  }[];
}

export interface ExpectedReservation {
  id: string;
  resource_type: string;
  status: string;
  resource_id: string;
  missing_resources: boolean;
  resources_changed: boolean;
  created_at: string;
  updated_at: string | null;
  /** Host allocations name a host; floating-IP allocations (only) an address instead. */
  allocations: {
    id: string;
    compute_host_id: string;
    hypervisor_hostname: string;
    floatingip_id?: string;
    floating_ip_address?: string;
  }[];
  computehost_reservation?: Record<string, unknown> & { min: number; max: number };
  instance_reservation?: Record<string, unknown>;
  floatingip_reservation?: {
    network_id: string;
    amount: number;
    required_floatingips: { id: string; address: string }[];
  };
}

export function expectedBlazar(): ExpectedBlazar {
  return JSON.parse(readFileSync(join(BLAZAR_DB_DIR, 'expected.json'), 'utf8')) as ExpectedBlazar;
}

/** `2029-12-01T08:00:00Z` as Climate shows a lease date and a timestamp. */
export const wireDate = (iso: string) => iso.replace('Z', '.000000');
export const timestamp = (iso: string | null) =>
  iso === null ? null : iso.replace('T', ' ').replace('Z', '');
