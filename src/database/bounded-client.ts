import type { Socket } from 'node:net';
import { Client } from 'pg';

/** A pool client whose deadline can be lifted for one session (migrations may run long). */
export interface DeadlineClient {
  deadlineMs: number;
}

/**
 * A pg client whose every query has a deadline: past it the connection is dropped, so the
 * query fails as "Connection terminated" (a 503) and the pool opens a new one. pg's own
 * `query_timeout` leaves the connection busy with the unanswered query, and whoever takes
 * it next waits behind it; a frozen server (SIGSTOP, a stalled disk) never answers, and its
 * kernel keeps the socket alive, so only a deadline of our own ends the wait.
 */
export function boundedClient(deadlineMs: number): typeof Client {
  return class BoundedClient extends Client implements DeadlineClient {
    deadlineMs = deadlineMs;

    // pg's query has a dozen overloads; the deadline wraps whichever was called.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override query(...args: unknown[]): any {
      const result: unknown = (super.query as (...a: unknown[]) => unknown)(...args);
      if (this.deadlineMs > 0 && result instanceof Promise) {
        const timer = setTimeout(() => this.drop(), this.deadlineMs);
        result.then(
          () => clearTimeout(timer),
          () => clearTimeout(timer),
        );
      }
      return result;
    }

    private drop(): void {
      (this as unknown as { connection: { stream: Socket } }).connection.stream.destroy();
    }
  };
}
