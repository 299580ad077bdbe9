import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BeforeApplicationShutdown, Inject, Injectable, type LoggerService } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { markOpsPort } from '../common/auth/auth.guard.js';
import { requestIdOf } from '../common/http-middleware.js';
import { listenProblem } from '../config/listen-problem.js';
import { observeRequest } from './access-log.js';
import { Metrics } from './metrics.js';

export const APP_LOGGER = Symbol('APP_LOGGER');

/** The only paths the ops port answers. */
export const OPS_PATHS: ReadonlySet<string> = new Set(['/metrics', '/healthz', '/readyz']);

/** The ops port could not be opened; says which setting to change. */
export class OpsPortError extends Error {
  constructor(host: string, port: number, cause: unknown) {
    const why = listenProblem((cause as { code?: unknown } | null)?.code) ?? String(cause);
    super(`METRICS_PORT=${port} (METRICS_HOST=${host}): ${why}; pick another METRICS_PORT.`, {
      cause,
    });
    this.name = 'OpsPortError';
  }
}

export function formatAddress(address: AddressInfo | string | null): string {
  if (address === null) return '';
  if (typeof address === 'string') return address;
  return address.family === 'IPv6'
    ? `[${address.address}]:${address.port}`
    : `${address.address}:${address.port}`;
}

/**
 * METRICS_PORT: a second listening socket on the app's own request handler that lets
 * only /metrics, /healthz and /readyz through, so the manager (which serves no API) can
 * be scraped and probed. Everything else is a 404 in Blazar's plain error body.
 */
@Injectable()
export class OpsServer implements BeforeApplicationShutdown {
  private server: Server | null = null;

  constructor(
    private readonly adapter: HttpAdapterHost,
    private readonly metrics: Metrics,
    @Inject(APP_LOGGER) private readonly logger: LoggerService | null,
  ) {}

  /** Listens; returns the address (`host:port`). The app must be initialised. */
  async listen(port: number, host: string): Promise<string> {
    const app =
      this.adapter.httpAdapter.getInstance<(req: IncomingMessage, res: ServerResponse) => void>();
    const observe = observeRequest(this.metrics, this.logger);
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (OPS_PATHS.has(path)) {
        // Open here, whatever the policy: this port is for the operator's own scrapers.
        markOpsPort(req);
        return app(req, res);
      }
      observe(req, res);
      res.setHeader('X-OpenStack-Request-ID', requestIdOf(req));
      notFound(res);
    });
    await new Promise<void>((resolve, reject) => {
      const refused = (error: Error) => reject(new OpsPortError(host, port, error));
      server.once('error', refused);
      server.listen(port, host, () => {
        server.off('error', refused);
        resolve();
      });
    });
    this.server = server;
    return formatAddress(server.address());
  }

  /** Closed with the app; open connections get a moment to finish, then are cut. */
  async beforeApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (server === null) return;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const cut = setTimeout(() => server.closeAllConnections(), 2000);
    await closed;
    clearTimeout(cut);
  }
}

function notFound(res: ServerResponse): void {
  const body = JSON.stringify({
    error: 404,
    error_message: 'Not found: this port serves only /metrics, /healthz and /readyz',
  });
  res.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(body);
}
