import { QueryFailedError, QueryRunnerAlreadyReleasedError } from 'typeorm';

/**
 * SQLSTATEs of a server that is going away or not accepting connections yet:
 * admin_shutdown, crash_shutdown, cannot_connect_now. Class 08 (connection exceptions)
 * is matched by prefix.
 */
const SERVER_GOING = new Set(['57P01', '57P02', '57P03']);

/** query_canceled: the statement outlived statement_timeout (an overloaded or stuck server). */
const TIMED_OUT = '57014';

/** Socket and name-resolution failures of the connection to the server. */
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * What node-postgres says, without a code, when a connection dies, cannot be made in
 * `connectionTimeoutMillis`, or no pooled connection frees up in that time.
 */
const MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect/,
  /is not queryable/,
  /^Cannot use a pool after calling end/,
];

function own(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  // The connection died under a transaction (dropped past its deadline, or the server
  // restarting), and the transaction's next statement finds its runner released.
  if (error instanceof QueryRunnerAlreadyReleasedError) return true;
  const code = (error as { code?: unknown }).code;
  if (code === TIMED_OUT) return true;
  if (typeof code === 'string' && (SERVER_GOING.has(code) || /^08/.test(code))) return true;
  if (typeof code === 'string' && NETWORK.has(code)) return true;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && MESSAGES.some((m) => m.test(message));
}

/**
 * Whether an error means the database cannot be reached (down, restarting, unreachable,
 * or no connection or answer within the timeouts), as opposed to a query that failed on
 * its own.
 * Looks through TypeORM's wrapper, `cause` chains and AggregateErrors.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  // An outbound HTTP call's refused connection is not the database's.
  if (error instanceof TypeError && error.message === 'fetch failed') return false;
  if (own(error)) return true;
  const inner: unknown[] = [];
  if (error instanceof QueryFailedError) inner.push(error.driverError);
  if (error instanceof AggregateError) inner.push(...(error.errors as unknown[]));
  if (error instanceof Error && error.cause !== undefined) inner.push(error.cause);
  return inner.some((e) => isDatabaseUnavailable(e, depth + 1));
}
