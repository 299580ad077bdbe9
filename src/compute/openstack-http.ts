import { ClimateError } from '../common/errors.js';

/** How long one call to an OpenStack service may take before it counts as failed. */
export const OPENSTACK_TIMEOUT_MS = 30_000;

/** A compute-side service that failed, answered wrongly or not in time: 502 or 504. */
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
 * body; a timeout or a refused connection is a ComputeServiceError (504 / 502).
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
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    throw new ComputeServiceError(
      `${req.method} ${req.url} ${timedOut ? 'timed out' : 'failed'}: ${String(err)}`,
      timedOut ? 504 : 502,
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
