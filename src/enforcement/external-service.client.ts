import { Logger } from '@nestjs/common';
import {
  ExternalServiceFilterException,
  ExternalServiceUnavailable,
  GENERIC_DENY_MSG,
} from './enforcement.errors.js';

export type ExternalEndpoint = 'check-create' | 'check-update' | 'on-end';

export interface ExternalServiceSettings {
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

const logger = new Logger('enforcement');

/**
 * Where an endpoint lives: resolved against the base as Blazar's urljoin does, so
 * `http://svc/api/` gives `http://svc/api/check-create` (without the last slash, the
 * last segment is replaced: `http://svc/check-create`).
 */
export function endpointUrl(base: string, endpoint: ExternalEndpoint): string {
  return new URL(endpoint, base).toString();
}

/**
 * One POST to the external service, as Blazar's ExternalServiceFilter makes it: JSON,
 * `X-Auth-Token` when a token is set. 204 allows; 403 refuses with the service's
 * `message`; another 4xx refuses with Blazar's generic message (both 400 to the caller).
 * A 5xx or any other answer is a 503, no answer in time a 504, and nothing of what the
 * service said beyond a 403's message reaches the caller (it is logged instead).
 */
export async function postToExternalService(
  settings: ExternalServiceSettings,
  endpoint: ExternalEndpoint,
  body: unknown,
): Promise<void> {
  const url = endpointUrl(settings.baseUrl, endpoint);
  let status: number;
  let text: string;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        ...(settings.token === '' ? {} : { 'X-Auth-Token': settings.token }),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    // By name: errors from fetch may come from another realm (e.g. under jest).
    const name = (err as { name?: string } | null)?.name;
    const timedOut = name === 'TimeoutError' || name === 'AbortError';
    throw new ExternalServiceUnavailable(
      timedOut
        ? `The external enforcement service did not answer ${endpoint} within ${settings.timeoutMs} ms; nothing was changed, try again later`
        : `The external enforcement service could not be reached for ${endpoint}; nothing was changed, try again later`,
      timedOut ? 504 : 503,
      { cause: err },
    );
  }
  if (status === 204) return;
  if (status === 403) throw new ExternalServiceFilterException(denyMessage(text));
  logger.warn({
    msg: `external service answered ${endpoint} with ${status}`,
    url,
    body: text.slice(0, 500),
  });
  if (status >= 400 && status < 500) throw new ExternalServiceFilterException(GENERIC_DENY_MSG);
  throw new ExternalServiceUnavailable(
    `The external enforcement service answered ${endpoint} with ${status} ` +
      '(204 allows, 403 refuses); nothing was changed, try again later',
    503,
  );
}

/** A 403's `message`, or Blazar's generic text when there is none. */
function denyMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { message?: unknown } | null)?.message;
    if (typeof message === 'string' && message !== '') return message;
  } catch {
    // not JSON: the generic message
  }
  return GENERIC_DENY_MSG;
}
