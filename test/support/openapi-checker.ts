import type { INestApplication } from '@nestjs/common';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Response } from 'supertest';
import { DOCS_PATH, OPENAPI_ROUTE } from '../../src/common/openapi.js';

/** A route as the document names it: `GET /v1/leases/{id}`. */
export type RouteKey = string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

interface RouterLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

/**
 * Every route the app's HTTP server answers, read from express's router (so a route
 * added outside Nest's controllers counts too), less the document's own routes.
 */
export function registeredRoutes(app: INestApplication): RouteKey[] {
  const express = app.getHttpAdapter().getInstance() as { router: { stack: RouterLayer[] } };
  const own = (path: string) =>
    path === OPENAPI_ROUTE || path === DOCS_PATH || path.startsWith(`${DOCS_PATH}/`);
  return express.router.stack.flatMap(({ route }) =>
    route === undefined || own(route.path)
      ? []
      : Object.keys(route.methods).map(
          (method) => `${method.toUpperCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`,
        ),
  );
}

/** `#/components/schemas/X` → `openapi#/$defs/X`, the id the schemas are added under. */
function resolvable<T>(schema: T): T {
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/schemas/', '"openapi#/$defs/'),
  ) as T;
}

/**
 * Real answers checked against the published document: each status documented, its
 * media type too, and a JSON body valid against its schema (requests the server took,
 * against theirs). Problems are collected, not thrown, so one run lists them all.
 */
export class OpenApiChecker {
  readonly problems: string[] = [];
  private readonly ajv = new Ajv2020({ allErrors: true, discriminator: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly statuses = new Map<RouteKey, number[]>();

  constructor(private readonly document: Json) {
    addFormats(this.ajv);
    this.ajv.addVocabulary(['example']);
    this.ajv.addSchema(resolvable({ $id: 'openapi', $defs: document.components.schemas }));
  }

  record(route: RouteKey, res: Response, requestBody?: unknown): void {
    this.statuses.set(route, [...(this.statuses.get(route) ?? []), res.status]);
    const operation = this.operation(route);
    if (operation === undefined) return this.problem(`${route}: not in the document`);
    const answer = `${route} → ${res.status}`;
    const declared: Json | undefined =
      operation.responses[String(res.status)] ??
      (res.status >= 400 ? operation.responses.default : undefined);
    if (declared === undefined) return this.problem(`${answer}: status not documented`);
    if (requestBody !== undefined && res.status < 300) {
      const schema = operation.requestBody?.content?.['application/json']?.schema;
      if (schema === undefined) this.problem(`${route}: request body not documented`);
      else this.validate(`${route} request`, schema, requestBody);
    }
    if (res.text === '' || res.text === undefined) {
      if (declared.content !== undefined) this.problem(`${answer}: no body, one is documented`);
      return;
    }
    const type = String(res.headers['content-type']).split(';')[0];
    const media: Json | undefined = declared.content?.[type];
    if (media === undefined) return this.problem(`${answer}: ${type} not documented`);
    if (type === 'application/json') this.validate(answer, media.schema, res.body);
  }

  /**
   * What is wrong with the coverage of `routes`: any not in the document, without a
   * summary, not called with success and with an error; any documented but not served.
   */
  coverage(routes: RouteKey[]): string[] {
    const found: string[] = [];
    for (const route of routes) {
      const operation = this.operation(route);
      const statuses = this.statuses.get(route) ?? [];
      if (operation === undefined) found.push(`${route}: not in the document`);
      else if (!operation.summary) found.push(`${route}: no summary (@ApiOperation)`);
      if (!statuses.some((s) => s < 400)) found.push(`${route}: never called with success`);
      if (!statuses.some((s) => s >= 400)) found.push(`${route}: never called with an error`);
    }
    for (const [path, item] of Object.entries(this.document.paths as Json)) {
      for (const method of Object.keys(item)) {
        const route = `${method.toUpperCase()} ${path}`;
        if (!routes.includes(route)) found.push(`${route}: documented, not served`);
      }
    }
    return found;
  }

  private operation(route: RouteKey): Json | undefined {
    const [method, path] = route.split(' ');
    return this.document.paths[path]?.[method.toLowerCase()];
  }

  private validate(what: string, schema: Json, value: unknown): void {
    const key = JSON.stringify(schema);
    let validator = this.validators.get(key);
    if (validator === undefined) {
      validator = this.ajv.compile(resolvable(schema));
      this.validators.set(key, validator);
    }
    if (!validator(value)) {
      const errors = (validator.errors ?? []).map(({ instancePath, message, params }) => {
        const key = (params as { additionalProperty?: string }).additionalProperty;
        return `${instancePath} ${message}${key === undefined ? '' : ` (${key})`}`;
      });
      this.problem(`${what}: ${errors.join('; ')} in ${JSON.stringify(value).slice(0, 500)}`);
    }
  }

  private problem(text: string): void {
    this.problems.push(text);
  }
}
