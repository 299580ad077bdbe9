import type { Client } from 'pg';
import { formatWireDate } from '../../src/common/dates.js';

/** A host in the reservation pool, as plain SQL over `h`. */
export const IN_POOL = `h.reservable
  AND NOT EXISTS (SELECT 1 FROM aggregate_hosts sp WHERE sp.host_id = h.id AND sp.kind = 'shared')`;

/** Every allocation of a host: whole-host ones and instance slots. */
export const USAGE = `(SELECT host_id, during FROM host_allocations
   UNION ALL SELECT host_id, during FROM instance_allocations)`;

/**
 * The capacity plan as the straightforward SQL has it: per step of [start, end) (ms), the
 * in-pool hosts matching `where`, those with some allocation overlapping the step, and
 * the matching hosts out of the pool; one query per step.
 */
export async function expectedCapacity(
  client: Client,
  where: string,
  start: number,
  end: number,
  stepMs: number,
) {
  const plan = [];
  for (let s = start; s < end; s += stepMs) {
    const e = Math.min(s + stepMs, end);
    const { rows } = await client.query<{ total: string; reserved: string; out: string }>(
      `SELECT count(*) FILTER (WHERE ${IN_POOL}) AS total,
              count(*) FILTER (WHERE ${IN_POOL} AND EXISTS (
                SELECT 1 FROM ${USAGE} u WHERE u.host_id = h.id
                   AND u.during && tstzrange($1, $2, '[)'))) AS reserved,
              count(*) FILTER (WHERE NOT (${IN_POOL})) AS out
         FROM hosts h WHERE ${where}`,
      [new Date(s), new Date(e)],
    );
    const [total, reserved] = [Number(rows[0].total), Number(rows[0].reserved)];
    plan.push({
      start_date: formatWireDate(new Date(s)),
      end_date: formatWireDate(new Date(e)),
      total,
      reserved,
      free: total - reserved,
      out_of_pool: Number(rows[0].out),
    });
  }
  return plan;
}
