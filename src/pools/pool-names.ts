/** The free pool: hosts no reservation holds. */
export const FREEPOOL = 'freepool';

/** The pools an admin moves a host between (PUT /v1/os-hosts/{id}/pool). */
export const MOVABLE_POOLS = ['shared', FREEPOOL] as const;
export type MovablePool = (typeof MOVABLE_POOLS)[number];

/**
 * The recycle pool's zone: Blazar's Nova filter keeps plain servers off hosts whose
 * aggregate zone has its prefix (AZ_PREFIX, Blazar's blazar_az_prefix), so draining
 * hosts are refused under either filter.
 */
export function recycleZone(prefix: string): string {
  return `${prefix}recycle`;
}

/** Blazar's availability zone for a reservation's pool (its Nova filter keys on it). */
export function reservationZone(reservationId: string, prefix: string): string {
  return `${prefix}${reservationId}`;
}
