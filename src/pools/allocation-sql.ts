import type { HostQuery } from '../requirements/host-query.js';
import { notShared } from './pools.repository.js';

// The read model of what occupies hosts says what keeps them busy (kept importable here).
export { busy } from './host-usage.js';

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
