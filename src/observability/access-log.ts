import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { AuthedRequest } from '../common/auth/auth.guard.js';
import { Metrics, UNMATCHED_ROUTE } from './metrics.js';

/** Probes come every few seconds: logged at debug so that they do not flood the log. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/** The route pattern (`/v1/leases/:id`), never the URL with its ids; set once routed. */
export function routeOf(req: IncomingMessage): string {
  const routed = req as { route?: { path?: unknown }; baseUrl?: string };
  const path = routed.route?.path;
  return typeof path === 'string' ? `${routed.baseUrl ?? ''}${path}` : UNMATCHED_ROUTE;
}

/**
 * Watches one request to its end: one access-log line (method, route pattern, status,
 * duration, request id, the caller's project) and one observation of the HTTP histogram.
 */
export function observeRequest(
  metrics: Metrics,
  logger: LoggerService | null,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const start = process.hrtime.bigint();
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = routeOf(req);
      // 499 as nginx has it: the client went away before the answer was sent.
      const status = res.writableFinished ? res.statusCode : 499;
      const method = req.method ?? 'UNKNOWN';
      metrics.httpDuration.observe({ method, route, status: String(status) }, seconds);
      if (logger === null) return;
      const line = {
        msg: 'request',
        method,
        route,
        status,
        duration_ms: Math.round(seconds * 1e6) / 1e3,
        // The id returned to the client, so that its logs and these meet.
        request_id: res.getHeader('x-openstack-request-id'),
        project_id: (req as AuthedRequest).identity?.projectId,
      };
      if (PROBES.has(route)) logger.debug?.(line, 'http');
      else logger.log(line, 'http');
    });
  };
}

/** Express middleware form of observeRequest; registered right after the request id. */
export function accessLog(metrics: Metrics, logger: LoggerService | null) {
  const observe = observeRequest(metrics, logger);
  return (req: Request, res: Response, next: NextFunction): void => {
    observe(req, res);
    next();
  };
}
