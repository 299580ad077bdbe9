/** Reservation statuses (lowercase, as Blazar). */
export type ReservationStatus = 'pending' | 'active' | 'deleted' | 'error';
