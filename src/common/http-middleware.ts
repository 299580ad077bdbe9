import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { requestContext } from './request-context.js';

const REQUEST_ID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MICROVERSION = /^([1-9]\d*)\.([1-9]\d*|0)$/;

/** Framework-level errors use Blazar's generic body {error, error_message}. */
function plainError(res: Response, status: number, message: string): void {
  res.status(status).json({ error: status, error_message: message });
}

/** The client's X-OpenStack-Request-ID when it is a well-formed `req-<uuid>`, else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const inbound = req.headers['x-openstack-request-id'];
  return typeof inbound === 'string' && REQUEST_ID.test(inbound) ? inbound : `req-${randomUUID()}`;
}

/**
 * The request id, first of all: the one logged is the one returned (the client's own when
 * it sent a valid one, so that its logs and Climate's meet), and logs below carry it.
 */
export function requestIds(req: Request, res: Response, next: NextFunction): void {
  const requestId = requestIdOf(req);
  res.setHeader('X-OpenStack-Request-ID', requestId);
  requestContext.run({ requestId }, next);
}

/** Kubernetes and Prometheus probes: not Blazar's API, so no microversion check there. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Cross-cutting HTTP behaviour of Blazar's API: `.json` suffixes, JSON-only bodies and the
 * `OpenStack-API-Version` header (only 1.0 exists). Runs after `requestIds`.
 */
export function httpMiddleware(req: Request, res: Response, next: NextFunction): void {
  const [path, query] = splitUrl(req.url);
  if (PROBES.has(path)) return next();
  if (path.endsWith('.json')) req.url = path.slice(0, -'.json'.length) + query;

  const contentType = req.header('content-type');
  const hasBody = Number(req.header('content-length') ?? 0) > 0;
  if (hasBody && contentType !== undefined && !/^application\/json\b/i.test(contentType)) {
    return plainError(res, 400, `Content type '${contentType}' isn't supported`);
  }

  const requested = req.header('openstack-api-version');
  if (requested !== undefined) {
    const [service, version] = requested.trim().split(/\s+/);
    if (service?.toLowerCase() === 'reservation' && version !== undefined) {
      if (version !== 'latest' && !MICROVERSION.test(version)) {
        return plainError(
          res,
          400,
          `API Version String ${version} is of invalid format. Must be of format MajorNum.MinorNum.`,
        );
      }
      if (version !== 'latest' && version !== '1.0') {
        return plainError(
          res,
          406,
          `Version ${version} is not supported by the API. Minimum is 1.0 and maximum is 1.0.`,
        );
      }
    }
  }
  res.setHeader('OpenStack-API-Version', 'reservation 1.0');
  res.setHeader('Vary', 'OpenStack-API-Version');
  next();
}

function splitUrl(url: string): [string, string] {
  const at = url.indexOf('?');
  return at < 0 ? [url, ''] : [url.slice(0, at), url.slice(at)];
}
