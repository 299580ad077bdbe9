import type { HostQuery } from '../requirements/host-query.js';
import { notShared } from './pools.repository.js';

// The read model of what occupies hosts says what keeps them busy (kept importable here).
export { busy } from './host-usage.js';

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
    AND ${notShared('h')}
    AND (${q.where})`;
}

/** `$n` for the next parameter pushed onto `params`. */
export function bind(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}
