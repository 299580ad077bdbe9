/** The TypeORM entities, handed to the data source by the app (database/ names none). */
import { Host } from './hosts/entities/host.entity.js';
import { IdempotencyKey } from './model/idempotency-key.entity.js';
import { Lease } from './model/lease.entity.js';
import { LeaseEvent } from './model/lease-event.entity.js';
import { Reservation } from './model/reservation.entity.js';

export const ENTITIES = [Lease, Reservation, LeaseEvent, IdempotencyKey, Host];
