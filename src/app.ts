import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module.js';
import { Clock, SystemClock } from './common/clock.js';
import { httpMiddleware, requestIds } from './common/http-middleware.js';
import { InputGuard } from './common/input-guard.js';
import { JsonLogger } from './common/json-logger.js';
import { setupOpenApi } from './common/openapi.js';
import { databasePoolSize, type Config } from './config/config.js';
import { migrate, openDatabase } from './database/data-source.js';
import { ENTITIES } from './entities.js';
import type { ResourcePlugin } from './plugins/resource-plugin.js';
import type { ComputeDriver } from './compute/compute-driver.js';
import { accessLog } from './observability/access-log.js';
import { Metrics } from './observability/metrics.js';
import { AuthStrategy } from './common/auth/identity.js';
import { Policy } from './common/auth/policy.js';
import { FILTER_PATH, filterGate } from './scheduler/filter-body.js';
import { FilterBodyWorker } from './scheduler/filter-body-worker.js';
import { serveWebPage } from './web-page.js';

export interface BuildOptions {
  clock?: Clock;
  plugins?: ResourcePlugin[];
  driver?: ComputeDriver;
  logger?: JsonLogger | false;
}

/** Opens the database, runs migrations and builds the Nest application (not listening). */
export async function buildApp(
  config: Config,
  options: BuildOptions = {},
): Promise<INestApplication> {
  const logger = options.logger ?? new JsonLogger(config.logLevel);
  const progress = (msg: string) => {
    if (logger !== false) logger.log({ msg }, 'climate');
  };
  const database = await openDatabase(config, databasePoolSize(config), progress, ENTITIES);
  let migrationsApplied: string[];
  try {
    migrationsApplied = await migrate(database.dataSource, progress);
  } catch (error) {
    await database.close();
    throw error;
  }
  const clock = options.clock ?? new SystemClock();
  const plugins = options.plugins ?? [];
  let app: NestExpressApplication;
  try {
    app = await NestFactory.create<NestExpressApplication>(
      AppModule.forRoot({
        config,
        database,
        clock,
        plugins,
        driver: options.driver,
        logger: logger === false ? null : logger,
        migrationsApplied,
      }),
      { logger: logger === false ? false : logger, abortOnError: false },
    );
  } catch (error) {
    // E.g. a bad PLUGINS: leave nothing open (the embedded database's lock included).
    await database.close().catch(() => undefined);
    throw error;
  }
  app.disable('x-powered-by');
  app.set('etag', false);
  // Behind a TLS proxy: links and logs use the client's scheme and address.
  app.set('trust proxy', config.trustProxy.length === 0 ? false : config.trustProxy);
  // The request id first, so that the access log (and every log below) carries it.
  app.use(requestIds);
  app.use(accessLog(app.get(Metrics), logger === false ? null : logger));
  app.use(httpMiddleware);
  // The scheduler filter's body lists the fleet (up to 16 MB, for the callers allowed to
  // use it, read after their check); every other route keeps 100 KB.
  app.use(
    FILTER_PATH,
    filterGate(app.get(AuthStrategy), app.get(Policy), app.get(FilterBodyWorker)),
  );
  app.useGlobalGuards(new InputGuard());
  serveWebPage(app);
  setupOpenApi(app);
  return app;
}
