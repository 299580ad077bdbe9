import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { errorMessage } from './bounded.js';
import { Metrics } from './metrics.js';

export interface PollRecord {
  /** Monotonic milliseconds (performance.now) when the poll finished. */
  at: number;
  error: string | null;
}

export interface PulseState {
  /** When the manager's timer started; null when it has not (or runs no timer). */
  startedAt: number | null;
  lastPoll: PollRecord | null;
  /** The last poll that finished without error. */
  lastOk: number | null;
}

/** Why the manager cannot claim events, or null when it can. */
export function pollProblem(state: PulseState, now: number, staleAfterMs: number): string | null {
  const last = state.lastPoll;
  if (last === null) {
    return state.startedAt === null
      ? 'the manager has not started'
      : `no poll has finished in the ${Math.round(now - state.startedAt)} ms since the manager started`;
  }
  if (last.error !== null) return `the last poll failed: ${last.error}`;
  const age = now - last.at;
  if (age > staleAfterMs) {
    return `the last poll finished ${Math.round(age)} ms ago (more than ${staleAfterMs} ms)`;
  }
  return null;
}

/**
 * The manager's heartbeat as readiness sees it: when its polls finish and whether they
 * failed. Process time (monotonic), not the injected clock: this is about the process
 * working now, not about the domain's time.
 */
@Injectable()
export class ManagerPulse {
  private state: PulseState = { startedAt: null, lastPoll: null, lastOk: null };

  constructor(private readonly metrics: Metrics) {}

  started(): void {
    this.state = { ...this.state, startedAt: performance.now() };
  }

  polled(error: unknown = null): void {
    const at = performance.now();
    const reason = error === null ? null : errorMessage(error);
    this.state = {
      ...this.state,
      lastPoll: { at, error: reason },
      lastOk: reason === null ? at : this.state.lastOk,
    };
    this.metrics.managerPolls.inc({ result: reason === null ? 'ok' : 'failed' });
  }

  snapshot(): PulseState {
    return this.state;
  }
}
