import { ClimateError } from '../common/errors.js';

/** How long one call to an OpenStack service may take before it counts as failed. */
export const OPENSTACK_TIMEOUT_MS = 30_000;

/** A compute-side service that answered wrongly (502), could not be reached (503) or not in time (504). */
export class ComputeServiceError extends ClimateError {
  constructor(message: string, status = 502, options?: { cause?: unknown }) {
    super(status, 'ComputeServiceError', message, options);
  }
}

export interface OpenStackRequest {
  method: string;
  url: string;
  token: string;
  /** Microversion headers and the like. */
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
}

/**
 * One JSON call to an OpenStack API, bounded in time. Returns the status and the parsed
 * body; a timeout or an unreachable service is a ComputeServiceError (504 / 503).
 */
export async function openstackCall(
  req: OpenStackRequest,
): Promise<{ status: number; body: unknown; text: string }> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(req.url, {
      method: req.method,
      headers: {
        'X-Auth-Token': req.token,
        Accept: 'application/json',
        ...(req.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...req.headers,
      },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: AbortSignal.timeout(req.timeoutMs ?? OPENSTACK_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (err) {
    // By name: errors from fetch may come from another realm (e.g. under jest).
    const name = (err as { name?: string } | null)?.name;
    const timedOut = name === 'TimeoutError' || name === 'AbortError';
    // Unreachable (refused, reset, no route) is 503; a service too slow to answer, 504.
    throw new ComputeServiceError(
      `${req.method} ${req.url} ${timedOut ? 'timed out' : 'could not be reached'}: ${String(err)}`,
      timedOut ? 504 : 503,
      { cause: err },
    );
  }
  let body: unknown = {};
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = {};
    }
  }
  return { status: res.status, body, text };
}
