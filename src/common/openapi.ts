import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';

/** The security scheme every route needs unless it says otherwise (version discovery). */
export const AUTH_SCHEME = 'X-Auth-Token';

/**
 * GET /openapi.json: the HTTP middleware strips a `.json` suffix from every path, as
 * Blazar does, so the document's route is /openapi.
 */
export const OPENAPI_ROUTE = '/openapi';
/** The Swagger UI and its assets, served from this process (no CDN). */
export const DOCS_PATH = '/docs';

function packageVersion(): string {
  // src/common or dist/common: package.json is two folders up from either.
  const file = join(__dirname, '..', '..', 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * Object schemas are closed unless their class says what else they carry
 * (ApiAdditionalProperties), so a response key the class does not declare fails the
 * schema test.
 */
function closeObjectSchemas(document: OpenAPIObject): void {
  for (const schema of Object.values(document.components?.schemas ?? {})) {
    if ('properties' in schema && schema.additionalProperties === undefined) {
      schema.additionalProperties = false;
    }
  }
}

/** The OpenAPI 3.1 document of every route, from the controllers' decorators. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Climate reservation API')
    .setDescription(
      "Leases and reservations of cloud hosts and instance slots, wire-compatible with OpenStack Blazar's reservation API (v1).",
    )
    .setVersion(packageVersion())
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Auth-Token' }, AUTH_SCHEME)
    .addSecurityRequirements(AUTH_SCHEME)
    .build();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) =>
      `${controller.replace(/Controller$/, '')}_${method}`,
  });
  closeObjectSchemas(document);
  return document;
}

/** GET /openapi.json and the Swagger UI at GET /docs (its assets served from here). */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup(DOCS_PATH, app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: OPENAPI_ROUTE,
    raw: ['json'],
    customSiteTitle: 'Climate reservation API',
  });
}

/** The document as committed in docs/openapi.json: two-space indents, a final newline. */
export function openApiJson(document: OpenAPIObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
