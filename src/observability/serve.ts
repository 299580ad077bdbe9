import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { Config } from '../config/config.js';
import { Lifecycle, type Listening } from './lifecycle.js';
import { formatAddress, OpsServer } from './ops-server.js';

/**
 * Opens what the role serves: the API on HOST:PORT (api, all) and the ops port on
 * METRICS_HOST:METRICS_PORT (manager; all only when METRICS_PORT is set; only /metrics,
 * /healthz and /readyz), then logs the start line. The ops port opens first, so a bad
 * METRICS_PORT stops the start before the API takes traffic.
 */
export async function serve(app: INestApplication, config: Config): Promise<Listening> {
  await app.init();
  const ops =
    config.metricsPort === null
      ? null
      : await app.get(OpsServer).listen(config.metricsPort, config.metricsHost);
  let api: string | null = null;
  if (config.role !== 'manager') {
    await app.listen(config.port, config.host);
    api = formatAddress((app.getHttpServer() as Server).address());
  }
  const listening = { api, ops };
  app.get(Lifecycle).started(listening);
  return listening;
}
