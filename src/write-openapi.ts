import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from './app.js';
import { buildOpenApiDocument, openApiJson } from './common/openapi.js';
import { loadConfig } from './config/config.js';

/** The committed reference copy; test/openapi.test.ts fails when it differs from the code. */
const OPENAPI_FILE = join(__dirname, '..', 'docs', 'openapi.json');

/** `npm run docs:api`: writes docs/openapi.json from the code, on a throwaway database. */
async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'climate-openapi-'));
  try {
    const app = await buildApp(loadConfig({ DATA_DIR: dataDir }), { logger: false });
    try {
      writeFileSync(OPENAPI_FILE, openApiJson(buildOpenApiDocument(app)));
    } finally {
      await app.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
