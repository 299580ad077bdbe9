import 'reflect-metadata';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config/config.js';
import { DataDirLocked } from './database/data-dir-lock.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const app = await buildApp(config);
  app.enableShutdownHooks();
  if (config.role === 'manager') {
    await app.init();
    return;
  }
  await app.listen(config.port, config.host);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirLocked) {
    process.stderr.write(`${error.message}\n`);
  } else {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`Climate could not start: ${message}\n`);
    process.stderr.write(
      'Check DATABASE_URL (or the ./data directory when it is unset) and try again.\n',
    );
  }
  process.exit(1);
});
