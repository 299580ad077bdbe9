import { IdempotencyKey } from '../leases/entities/idempotency-key.entity.js';
import { Lease } from '../leases/entities/lease.entity.js';
import { LeaseEvent } from '../events/entities/lease-event.entity.js';
import { Reservation } from '../reservations/entities/reservation.entity.js';
import { Init1763800000000 } from './migrations/1763800000000-Init.js';

export const ENTITIES = [Lease, Reservation, LeaseEvent, IdempotencyKey];
export const MIGRATIONS = [Init1763800000000];
