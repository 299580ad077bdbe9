/** The free pool: hosts no reservation holds. */
export const FREEPOOL = 'freepool';

/**
 * The recycle pool's zone: Blazar's Nova filter keeps plain servers off hosts whose
 * aggregate zone has its prefix, so draining hosts are refused under either filter.
 */
export const RECYCLE_ZONE = 'blazar_recycle';

/** Blazar's availability zone for a reservation's pool (its Nova filter keys on it). */
export function reservationZone(reservationId: string): string {
  return `blazar_${reservationId}`;
}
