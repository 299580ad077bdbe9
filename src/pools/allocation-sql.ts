import type { HostQuery } from '../requirements/host-query.js';

/**
 * What keeps hosts busy over `range` (SQL of a tstzrange): (host_id, during) of the
 * whole-host allocations and instance slots overlapping it. The one place that says how
 * long an allocation holds its host for the availability search and the capacity plan
 * (its range already ends after the cleaning time); a lead time before each start would
 * widen `during` here (and `range` by as much).
 *
 * reservation_id is read too although no caller needs it: it is in neither table's
 * (host_id, during) GiST index, so the planner cannot answer from that index alone, which
 * it costs as cheap for a time-only condition but reads nearly whole (891 buffers at
 * 100,000 allocations, 8,216 at 1,000,000, against 38 and 132 through the SP-GiST index
 * on during).
 */
export function busy(range: string): string {
  const of = (table: string) =>
    `SELECT host_id, during, reservation_id FROM ${table} WHERE during && ${range}`;
  return `(${of('host_allocations')} UNION ALL ${of('instance_allocations')})`;
}

/**
 * The body of a recursive CTE `name(t, n)`: the first `limit` distinct ends (SQL) of
 * allocations of every type in (after, before), in time order, of the hosts `join` (SQL
 * joined to the allocation `a`) keeps, then a NULL once there is none. Each step reads
 * the next end of each table through its index on upper(during): many allocations
 * ending at once (leases made for the same hour) cost one step.
 */
export function distinctEnds(
  name: string,
  join: string,
  [after, before]: [string, string],
  limit: string,
): string {
  const next = (x: string) =>
    ['host_allocations', 'instance_allocations']
      .map(
        (table) => `(SELECT upper(a.during) FROM ${table} a ${join}
                      WHERE upper(a.during) > ${x} AND upper(a.during) < ${before}
                      ORDER BY upper(a.during) LIMIT 1)`,
      )
      .join(', ');
  return `SELECT least(${next(after)}) AS t, 1 AS n
          UNION ALL
          SELECT least(${next('e.t')}), e.n + 1 FROM ${name} e WHERE e.t IS NOT NULL AND e.n < ${limit}`;
}

/** Reservable, in the reservation pool (not shared), and matching the requirement. */
export function eligible(q: HostQuery): string {
  return `h.reservable
    AND NOT EXISTS (SELECT 1 FROM aggregate_hosts sp WHERE sp.host_id = h.id AND sp.kind = 'shared')
    AND (${q.where})`;
}

/** `$n` for the next parameter pushed onto `params`. */
export function bind(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}
