import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { json, raw, type NextFunction, type Request, type Response } from 'express';
import type { AuthedRequest } from '../common/auth/auth.guard.js';
import type { AuthStrategy } from '../common/auth/identity.js';
import type { Policy } from '../common/auth/policy.js';
import { ClimateError, errorBody, ServiceUnavailable } from '../common/errors.js';
import { markChecked } from '../common/input-guard.js';
import { assertStorable } from '../common/storable.js';
import { FilterBodyWorker, parseError, SMALL_PART_LIMIT } from './filter-body-worker.js';

/** The one route whose body names the fleet: every candidate host of a scheduling request. */
export const FILTER_PATH = '/v1/scheduler/filter';

/** 100,000 host names of 100 characters with their quotes and commas; others keep 100 KB. */
export const FILTER_BODY_LIMIT = '16mb';

/** The policy rule of the route (the controller checks it again). */
export const FILTER_RULE = 'climate:scheduler:filter';

/** A refused caller's body is read and dropped up to this much, then the connection cut. */
const DRAIN_BYTES = 32 * 1024 * 1024;
const DRAIN_MS = 10_000;

const parseSmall = json({ limit: SMALL_PART_LIMIT });
const readLarge = raw({ type: () => true, limit: FILTER_BODY_LIMIT });

/**
 * Answers with a Blazar error without reading the body: the answer is sent at once, then
 * what the client is still sending is read and dropped (bounded) so that it gets to read
 * the answer (closing on unread data would reset the connection), and the connection closes.
 */
export function refuse(req: Request, res: Response, error: ClimateError): void {
  const body = JSON.stringify(errorBody(error.status, error.message, error.errorName));
  res.status(error.status);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('Connection', 'close');
  if (error.status === 503) res.setHeader('Retry-After', '5');
  res.write(body);
  let seen = 0;
  const finish = () => {
    clearTimeout(timer);
    req.off('data', count);
    if (!res.writableEnded) res.end();
  };
  const count = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > DRAIN_BYTES) finish();
  };
  const timer = setTimeout(finish, DRAIN_MS);
  req.on('data', count);
  req.once('end', finish);
  req.once('error', finish);
  req.once('close', finish);
  if (req.complete) finish();
  req.resume();
}

/**
 * The scheduler filter's body, mounted in app.ts before Nest's own parser (which then
 * skips a parsed body). The caller is authenticated and authorised first, so a caller
 * not allowed gets its 401 or 403 without its body being read. An allowed caller's body
 * up to 100 KB is parsed here; a larger one (up to 16 MB) is read one at a time and
 * parsed in a worker thread, so that it never blocks other requests.
 */
export function filterGate(
  strategy: AuthStrategy,
  policy: Policy,
  worker: FilterBodyWorker,
): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    gate(strategy, policy, worker, req as AuthedRequest, res).then(next, (error: unknown) => {
      if (error instanceof ClimateError) refuse(req, res, error);
      else next(error);
    });
  };
}

async function gate(
  strategy: AuthStrategy,
  policy: Policy,
  worker: FilterBodyWorker,
  req: AuthedRequest,
  res: Response,
): Promise<void> {
  const identity = await strategy.authenticate(req.headers);
  // The route's rule, as POLICY_FILE has it (the guard checks it again).
  policy.enforce(identity, FILTER_RULE);
  req.identity = identity;
  const length = Number(req.headers['content-length']);
  if (Number.isFinite(length) && length <= SMALL_PART_LIMIT) {
    return parseWith(parseSmall, req, res);
  }
  const done = await worker.turn();
  if (done === null)
    throw new ServiceUnavailable('Too many large scheduler requests at once; try again shortly');
  try {
    await parseWith(readLarge, req, res);
    if (!Buffer.isBuffer(req.body)) return; // no body at all
    const reply = await worker.parse(req.body);
    if (!reply.ok) throw parseError(reply);
    // The rest is small: checked here as every body is; the host names were in the worker.
    assertStorable(reply.rest, 'the body');
    req.body = { ...reply.rest, hosts: reply.hosts };
    if (reply.hosts === undefined) delete (req.body as { hosts?: unknown }).hosts;
    markChecked(req.body as object);
  } finally {
    done();
  }
}

/** A body-parser middleware as a promise; its errors (413, 400) keep their status and type. */
function parseWith(parser: typeof parseSmall, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) =>
    parser(req, res, (error?: Error) => (error === undefined ? resolve() : reject(error))),
  );
}

function bodyOf(context: ExecutionContext): unknown {
  return context.switchToHttp().getRequest<Request>().body;
}

const isObject = (body: unknown): body is Record<string, unknown> =>
  typeof body === 'object' && body !== null && !Array.isArray(body);

/**
 * The filter's body but its host list, for the validation pipe (FilterRequestBody): the
 * list may name the fleet, and the pipe walks and copies what it is given (about 180 ms
 * for 100,000 names, even with the key excluded from the class).
 */
export const FilterFields = createParamDecorator((_: unknown, context: ExecutionContext) => {
  const body = bodyOf(context);
  if (!isObject(body)) return body;
  const fields = { ...body };
  delete fields.hosts;
  return fields;
});

/** The filter's host list as sent (checked by the worker when large, by the service). */
export const FilterHosts = createParamDecorator((_: unknown, context: ExecutionContext) => {
  const body = bodyOf(context);
  return isObject(body) ? body.hosts : undefined;
});
