import type { Client } from 'pg';
import type { TestApp } from './app.js';

/** Helpers for the manager concurrency and crash tests. */

export interface CreatedLease {
  id: string;
  reservationId: string;
}

export interface LeaseSpec {
  name: string;
  start: string;
  end: string;
  resourceType?: string;
}

/** Creates one lease with one reservation through the HTTP API. */
export async function createLease(t: TestApp, spec: LeaseSpec): Promise<CreatedLease> {
  const res = await t.http
    .post('/v1/leases')
    .send({
      name: spec.name,
      start_date: spec.start,
      end_date: spec.end,
      reservations: [{ resource_type: spec.resourceType ?? t.recorder.resourceType }],
    })
    .expect(201);
  return { id: res.body.lease.id, reservationId: res.body.lease.reservations[0].id };
}

/** Creates `count` leases, spread over the given apps, `parallel` requests at a time. */
export async function createLeases(
  apps: TestApp[],
  count: number,
  spec: (i: number) => LeaseSpec,
  parallel = 12,
): Promise<CreatedLease[]> {
  const out: CreatedLease[] = new Array<CreatedLease>(count);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      out[i] = await createLease(apps[i % apps.length], spec(i));
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return out;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** Polls `check` on real time until it returns a value other than undefined. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export interface EventRow {
  id: string;
  lease_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_error: string | null;
  retry_at: Date | null;
  claimed_by: string | null;
  claim_expires_at: Date | null;
  updated_at: Date | null;
}

export async function eventOf(
  client: Client,
  leaseId: string,
  type: 'start_lease' | 'before_end_lease' | 'end_lease',
): Promise<EventRow> {
  const { rows } = await client.query<EventRow>(
    `SELECT id, lease_id, event_type, status, attempts, last_error, retry_at, claimed_by,
            claim_expires_at, updated_at
       FROM events WHERE lease_id = $1 AND event_type = $2`,
    [leaseId, type],
  );
  if (rows.length !== 1) throw new Error(`expected one ${type} of lease ${leaseId}`);
  return rows[0];
}

export async function leaseRow(
  client: Client,
  id: string,
): Promise<{ status: string; version: number; updated_at: Date | null }> {
  const { rows } = await client.query(
    `SELECT status, version, updated_at FROM leases WHERE id = $1`,
    [id],
  );
  return rows[0];
}

export async function reservationStatus(client: Client, id: string): Promise<string> {
  const { rows } = await client.query(`SELECT status FROM reservations WHERE id = $1`, [id]);
  return rows[0].status;
}
