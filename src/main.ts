import 'reflect-metadata';
import { buildApp } from './app.js';
import { JsonLogger } from './common/json-logger.js';
import { loadConfig, type Config } from './config/config.js';
import { OpsPortError } from './observability/ops-server.js';
import { serve } from './observability/serve.js';
import { explainStartupError } from './database/startup-error.js';

let config: Config | null = null;

async function main(): Promise<void> {
  config = loadConfig(process.env);
  const logger = new JsonLogger(config.logLevel);
  const app = await buildApp(config, { logger });
  // process.exit after the shutdown hooks (not a re-raised signal), so the stop line is
  // written and the exit code is 0 for an orderly stop.
  app.enableShutdownHooks(undefined, { useProcessExit: true });
  await serve(app, config);
  process.once('exit', (code) =>
    logger.log({ msg: 'climate stopped', exit_code: code }, 'climate'),
  );
}

main().catch((error: unknown) => {
  const message =
    error instanceof OpsPortError ? error.message : explainStartupError(error, config);
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
