import type { Client } from 'pg';
import { PowerService } from '../../src/power/power.service.js';
import type { TestApp } from './app.js';

/** Helpers for the power plan tests: run the plan and the manager along a fake clock. */

export const MINUTE = 60_000;

/** One step of the manager: the power plan's run, then the lease events due. */
export async function step(t: TestApp): Promise<void> {
  await t.app.get(PowerService).run();
  await t.settle();
}

/** Moves the clock on `minutes`, a step per `every` minutes, each followed by a manager step. */
export async function runFor(t: TestApp, minutes: number, every = 1): Promise<void> {
  for (let m = 0; m < minutes; m += every) {
    t.clock.advance(every * MINUTE);
    await step(t);
  }
}

/** Host name -> power state, from Climate's record. */
export async function powerStates(client: Client): Promise<Record<string, string>> {
  const { rows } = await client.query<{ name: string; state: string }>(
    `SELECT h.hypervisor_hostname AS name, hp.state FROM host_power hp
       JOIN hosts h ON h.id = hp.host_id ORDER BY h.id`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.state]));
}

/**
 * Leases whose start ran while one of their hosts was not on: for each started host
 * reservation, the state its hosts last entered (power_log) before the start event was
 * done. Empty when every lease started on hosts that were on.
 */
export async function startsOnHostsNotOn(client: Client): Promise<string[]> {
  const { rows } = await client.query<{ lease: string; host: string; state: string }>(
    `SELECT l.name AS lease, h.hypervisor_hostname AS host, last.state
       FROM events e JOIN leases l ON l.id = e.lease_id
       JOIN reservations r ON r.lease_id = l.id
       JOIN (SELECT reservation_id, host_id FROM host_allocations
             UNION SELECT reservation_id, host_id FROM instance_allocations) a
         ON a.reservation_id = r.id
       JOIN hosts h ON h.id = a.host_id
       CROSS JOIN LATERAL (SELECT pl.state FROM power_log pl
                            WHERE pl.host_id = a.host_id AND pl.at <= e.updated_at
                            ORDER BY pl.at DESC, pl.id DESC LIMIT 1) last
      WHERE e.event_type = 'start_lease' AND e.status = 'DONE' AND last.state <> 'on'`,
  );
  return rows.map((r) => `${r.lease} on ${r.host} (${r.state})`);
}

/** Each host's transitions (states entered, in order) from the log. */
export async function powerLog(
  client: Client,
): Promise<Record<string, { state: string; at: Date }[]>> {
  const { rows } = await client.query<{ name: string; state: string; at: Date }>(
    `SELECT h.hypervisor_hostname AS name, pl.state, pl.at FROM power_log pl
       JOIN hosts h ON h.id = pl.host_id ORDER BY pl.at, pl.id`,
  );
  const log: Record<string, { state: string; at: Date }[]> = {};
  for (const r of rows) (log[r.name] ??= []).push({ state: r.state, at: r.at });
  return log;
}

/** Hosts of ACTIVE leases that are not on (should always be none). */
export async function activeOnHostsNotOn(client: Client): Promise<string[]> {
  const { rows } = await client.query<{ lease: string; host: string; state: string }>(
    `SELECT l.name AS lease, h.hypervisor_hostname AS host, hp.state
       FROM leases l JOIN reservations r ON r.lease_id = l.id
       JOIN (SELECT reservation_id, host_id FROM host_allocations
             UNION SELECT reservation_id, host_id FROM instance_allocations) a
         ON a.reservation_id = r.id
       JOIN hosts h ON h.id = a.host_id JOIN host_power hp ON hp.host_id = a.host_id
      WHERE l.status = 'ACTIVE' AND r.status = 'active' AND hp.state <> 'on'`,
  );
  return rows.map((r) => `${r.lease} on ${r.host} (${r.state})`);
}
