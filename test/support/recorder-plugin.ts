import type { EntityManager } from 'typeorm';
import { InvalidInput } from '../../src/common/errors.js';
import type { JsonObject } from '../../src/common/json.js';
import type { Lease } from '../../src/model/lease.entity.js';
import type { Reservation } from '../../src/model/reservation.entity.js';
import type { ResourcePlugin, Window } from '../../src/plugins/resource-plugin.js';

export type Action = 'reserve' | 'update' | 'release' | 'on_start' | 'before_end' | 'on_end';

export interface Call {
  action: Action;
  reservationId: string;
  leaseId: string;
  at: number;
}

/**
 * A test double of a resource plugin: records every call and can be told to fail or to
 * hang in an action. It holds no resources; the real plugins have their own tests.
 */
export class RecorderPlugin implements ResourcePlugin {
  readonly calls: Call[] = [];
  /** Remaining failures per action. */
  readonly failures = new Map<Action, number>();
  /** Actions that wait until released. */
  readonly gates = new Map<Action, Promise<void>>();

  constructor(readonly resourceType = 'test:recorder') {}

  count(action: Action, reservationId?: string): number {
    return this.calls.filter(
      (c) =>
        c.action === action && (reservationId === undefined || c.reservationId === reservationId),
    ).length;
  }

  failNext(action: Action, times = 1): void {
    this.failures.set(action, times);
  }

  /** The next calls of `action` block until the returned function is called. */
  hold(action: Action): () => void {
    let release!: () => void;
    this.gates.set(action, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.gates.delete(action);
      release();
    };
  }

  validate(values: Record<string, unknown>): JsonObject {
    const size = values.size ?? 1;
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 1) {
      throw new InvalidInput('Malformed parameter size', 'MalformedParameter');
    }
    return { size };
  }

  validateUpdate(reservation: Reservation, changes: Record<string, unknown>): JsonObject {
    return this.validate({ ...reservation.params, ...changes });
  }

  async reserve(_tx: EntityManager, r: Reservation, _w: Window): Promise<void> {
    await this.record('reserve', r);
  }
  async update(_tx: EntityManager, r: Reservation, _w: Window): Promise<void> {
    await this.record('update', r);
  }
  async release(_tx: EntityManager, r: Reservation): Promise<void> {
    await this.record('release', r);
  }
  async onStart(r: Reservation, _l: Lease): Promise<void> {
    await this.record('on_start', r);
  }
  async beforeEnd(r: Reservation, _l: Lease): Promise<void> {
    await this.record('before_end', r);
  }
  async onEnd(r: Reservation, _l: Lease): Promise<void> {
    await this.record('on_end', r);
  }

  present(r: Reservation): JsonObject {
    return { size: r.params.size as number };
  }

  private async record(action: Action, r: Reservation): Promise<void> {
    await this.gates.get(action);
    const left = this.failures.get(action) ?? 0;
    if (left > 0) {
      this.failures.set(action, left - 1);
      throw new Error(`injected ${action} failure`);
    }
    this.calls.push({ action, reservationId: r.id, leaseId: r.leaseId, at: Date.now() });
  }
}
