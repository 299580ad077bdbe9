import type { JsonObject } from '../common/json.js';
import type { EntityManager } from 'typeorm';
import type { MovedAllocation } from '../pools/evacuation.js';
import type { FilterAnswer, SchedulingRequest } from './scheduling.js';
import type { Lease } from '../model/lease.entity.js';
import type { Reservation } from '../model/reservation.entity.js';
import type { SqlParams } from '../database/sql.js';

/** The window a reservation must hold its resources for. */
export interface Window {
  start: Date;
  end: Date;
}

/** Who asked, for plugins that check visibility of what a reservation names. */
export interface ReserveContext {
  projectId: string;
  now: Date;
}

/**
 * A new reservation's resources as `prepare` chose (and locked) them: written by the
 * create's one statement, with the lease, its reservations and events.
 */
export interface PreparedReservation {
  /**
   * Bodies of data-modifying CTEs (`INSERT …`) that write the allocations, values bound
   * with `p`. Each must write nothing unless `go` (an SQL boolean) holds.
   */
  write(p: SqlParams, go: string): string[];
  /**
   * An SQL expression evaluated in the same statement, with a snapshot taken after
   * `prepare`'s locks: NULL while the choice still holds, else what changed (e.g. the
   * hosts lost meanwhile). When one is not NULL nothing is written and `again` is called
   * with its value.
   */
  recheck?(p: SqlParams): string;
  /** A new choice after a failed recheck; throws a Conflict (409) when there is no room. */
  again?(tx: EntityManager, stale: unknown): Promise<PreparedReservation>;
  /** Whole hosts held over the lease's window (counted by the per-project limits). */
  hosts: number;
  /** What `describe` would add for the new reservation. */
  details?: object;
}

/**
 * A resource plugin reserves one kind of resource (`resourceType`) for a lease.
 *
 * Database methods (`reserve`, `update`, `release`) run inside the caller's transaction
 * and must use the given EntityManager only. Lifecycle actions (`onStart`, `beforeEnd`,
 * `onEnd`) run outside any transaction, may call external systems, and must be
 * idempotent: the manager may repeat an action after a crash or a retry.
 */
export interface ResourcePlugin {
  /** Unique type name, e.g. `physical:host`. */
  readonly resourceType: string;

  /**
   * Its actions create things in the tenant's own project (with Keystone, the lease
   * then gets a trust from the caller when it is created).
   */
  readonly actsAsUser?: boolean;

  /**
   * Checks a reservation request from the API and returns its typed parameters.
   * Throws an InvalidInput (400) on bad input. Writes nothing (it may read, e.g. the
   * compute service).
   */
  validate(
    values: Record<string, unknown>,
    context: ReserveContext,
  ): JsonObject | Promise<JsonObject>;

  /**
   * Validates an update of an existing reservation's parameters; returns the new params.
   * `lease` tells whether the reservation has started.
   */
  validateUpdate(
    reservation: Reservation,
    changes: Record<string, unknown>,
    lease: Lease,
  ): JsonObject;

  /**
   * Allocates resources for `window` once the reservation's row exists; throws a
   * Conflict (409) when there is no room. Needed only by a plugin without `prepare` (a
   * create writes a prepared reservation itself, so the two cannot differ).
   */
  reserve?(tx: EntityManager, reservation: Reservation, window: Window): Promise<void>;

  /**
   * Optional, the fast create: chooses and locks what a new reservation needs for
   * `window`, writing nothing (its rows do not exist yet), and says how to write it.
   * Throws a Conflict (409) when there is no room. Without it, a create inserts the
   * lease and its reservations first and then calls `reserve`.
   */
  prepare?(
    tx: EntityManager,
    reservation: Reservation,
    window: Window,
  ): Promise<PreparedReservation>;

  /**
   * Optional: makes in the compute service, before the create's transaction, what a new
   * reservation shows from its create on (as Blazar makes its flavor, server group and
   * aggregate at create), and returns the keys to store in its params. Runs outside any
   * transaction, idempotent; a create that then fails undoes it with `discard`. A
   * compute service that cannot be reached fails the create (503) before anything is
   * written.
   */
  materialize?(reservation: Reservation, lease: Lease): Promise<JsonObject>;

  /**
   * Optional: removes what `materialize` made, for a reservation that never started
   * (its create failed, or its lease was deleted before the start). Idempotent.
   */
  discard?(reservation: Reservation, lease: Lease): Promise<void>;

  /**
   * The error for any change but a rename of a lease that holds such a reservation, for a
   * type whose leases cannot be changed (Blazar's flavor plugin). Optional.
   */
  leaseChangeRefusal?(): Error;

  /** Re-allocates for new params and/or a new window, keeping what still fits. */
  update(tx: EntityManager, reservation: Reservation, window: Window): Promise<void>;

  /** Frees every allocation of the reservation (lease deleted or ended). */
  release(tx: EntityManager, reservation: Reservation): Promise<void>;

  /** The lease starts: hand the resources to the tenant. */
  onStart(reservation: Reservation, lease: Lease): Promise<void>;

  /** Some time before the end (e.g. snapshot). */
  beforeEnd(reservation: Reservation, lease: Lease): Promise<void>;

  /** The lease ends: take the resources back. */
  onEnd(reservation: Reservation, lease: Lease): Promise<void>;

  /**
   * Moves the type's current and future holdings off `hostIds` (failed, or leaving the
   * reservation pool) onto other hosts its reservations accept, inside the caller's
   * transaction, locking what it moves. Optional: a type that holds no hosts has none.
   */
  evacuate?(tx: EntityManager, hostIds: number[], now: Date): Promise<MovedAllocation[]>;

  /**
   * Active reservations of this type whose pool, as the compute service last confirmed
   * it, differs from the hosts they hold (an earlier resync failed): healing resyncs them.
   * Optional: a type without pools has none.
   */
  outOfLine?(em: EntityManager): Promise<string[]>;

  /**
   * The scheduler filter's answer for a request that is for one of this type's
   * reservations (e.g. an instance reservation's flavor), or null when it is not.
   * Optional.
   */
  schedule?(em: EntityManager, request: SchedulingRequest): Promise<FilterAnswer | null>;

  /**
   * Periodic work where the manager runs (e.g. bringing Climate's record in line with
   * the compute service). Optional; one failing item must not stop the rest.
   */
  upkeep?(): Promise<void>;

  /**
   * Type-specific keys merged into the reservation's wire object: a response class of
   * the plugin's, which the OpenAPI document describes (the lease's reservation schemas).
   */
  present(reservation: Reservation): object;

  /**
   * What each reservation holds, as the type's own API shows those objects: Blazar's
   * `allocations` in the bodies the enforcement filters receive. Optional; without it,
   * the hosts (as the host API shows them) its allocations are on.
   */
  allocated?(em: EntityManager, reservations: Reservation[]): Promise<Map<string, object[]>>;

  /**
   * More keys that need the database (e.g. claims), for many reservations in one go.
   * Optional; merged after `present`.
   */
  describe?(em: EntityManager, reservations: Reservation[]): Promise<Map<string, object>>;
}

/** Every plugin on offer: the shipped ones, then EXTRA_PLUGINS. */
export const RESOURCE_PLUGINS = Symbol('RESOURCE_PLUGINS');

/** Plugins the app offers besides Climate's own (test doubles), provided by the app. */
export const EXTRA_PLUGINS = Symbol('EXTRA_PLUGINS');
