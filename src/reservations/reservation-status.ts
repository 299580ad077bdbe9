/** Reservation state machine (lowercase, as Blazar), pure. */
export const RESERVATION_STATUSES = ['pending', 'active', 'deleted', 'error'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

const NEXT: Record<ReservationStatus, readonly ReservationStatus[]> = {
  pending: ['active', 'deleted', 'error'],
  active: ['deleted', 'error'],
  error: ['deleted'],
  deleted: [],
};

export function canReservationTransition(from: ReservationStatus, to: ReservationStatus): boolean {
  return NEXT[from].includes(to);
}
