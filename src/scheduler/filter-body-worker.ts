import { Worker } from 'node:worker_threads';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { ClimateError, ServiceUnavailable } from '../common/errors.js';
import { LONE_SURROGATE } from '../common/storable.js';

/** What the worker gives back: the body, or the error to answer with. */
export type ParsedBody =
  | { ok: true; hosts: unknown; rest: Record<string, unknown> }
  | { ok: false; status: number; name: string; message: string };

/** Everything but `hosts` is as small as any other route's body (100 KB). */
export const SMALL_PART_LIMIT = 100 * 1024;

/**
 * Parses a scheduler filter body off the main thread. Runs in the worker (its source is
 * the worker's code), so it uses nothing but its arguments and globals. Only `hosts` may
 * be large, and it must be a string or strings: a body of millions of numbers or objects
 * costs the worker, never the event loop, and nothing large comes back but host names.
 */
export function parseFilterBody(bytes: Uint8Array, lone: RegExp, smallLimit: number): ParsedBody {
  const fail = (status: number, name: string, message: string): ParsedBody => ({
    ok: false,
    status,
    name,
    message,
  });
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return fail(400, 'BadRequest', 'Malformed JSON body');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail(400, 'InvalidInput', 'The body must be a JSON object');
  }
  const { hosts, ...rest } = body as Record<string, unknown>;
  const list = typeof hosts === 'string' ? [hosts] : hosts;
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list) || !list.every((h) => typeof h === 'string')) {
      return fail(400, 'InvalidInput', 'hosts must be a string or a list of strings');
    }
    for (const [i, h] of list.entries()) {
      if (h.includes('\u0000') || lone.test(h)) {
        return fail(400, 'MalformedParameter', `The body: hosts.${i} is not valid text`);
      }
    }
  }
  if (JSON.stringify(rest).length > smallLimit) {
    return fail(413, 'PayloadTooLarge', 'Only the host list may be larger than 100 KB');
  }
  return { ok: true, hosts, rest };
}

/** The worker's code: parseFilterBody on every message, its answer posted back. */
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const parse = ${parseFilterBody.toString()};
const lone = new RegExp(workerData.lone);
parentPort.on('message', ({ id, bytes }) => {
  let reply;
  try {
    reply = parse(bytes, lone, workerData.smallLimit);
  } catch (error) {
    reply = { ok: false, status: 500, name: 'INTERNAL_SERVER_ERROR', message: String(error) };
  }
  parentPort.postMessage({ id, reply });
});
`;

/** Longest a parse may take before the worker is replaced and the caller told 503. */
const PARSE_TIMEOUT_MS = 30_000;

/**
 * One worker thread for large filter bodies, one body at a time: at most one 16 MB body
 * is read and parsed at once (so memory is bounded too), a few more wait unread (TCP holds
 * them), and past that the caller gets 503 with Retry-After.
 */
@Injectable()
export class FilterBodyWorker implements OnApplicationShutdown {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, (reply: ParsedBody) => void>();
  private running = false;
  private readonly waiting: (() => void)[] = [];

  private readonly maxWaiting = 4;

  /** A turn to read and parse one body, or null when too many wait already. */
  async turn(): Promise<(() => void) | null> {
    if (this.running) {
      if (this.waiting.length >= this.maxWaiting) return null;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.running = true;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next === undefined) this.running = false;
      else next();
    };
  }

  async parse(bytes: Buffer): Promise<ParsedBody> {
    const worker = this.started();
    const id = this.nextId++;
    // A copy the worker owns: the request's buffer may be a slice of a pooled one.
    const copy = new Uint8Array(bytes);
    return new Promise<ParsedBody>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.stop();
        reject(new ServiceUnavailable('The scheduler filter body took too long to parse'));
      }, PARSE_TIMEOUT_MS);
      this.pending.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      worker.postMessage({ id, bytes: copy }, [copy.buffer]);
    });
  }

  onApplicationShutdown(): void {
    this.stop();
  }

  stop(): void {
    void this.worker?.terminate();
    this.worker = null;
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { lone: LONE_SURROGATE.source, smallLimit: SMALL_PART_LIMIT },
    });
    // Idle, it must not keep the process alive.
    worker.unref();
    worker.on('message', ({ id, reply }: { id: number; reply: ParsedBody }) => {
      this.pending.get(id)?.(reply);
      this.pending.delete(id);
    });
    worker.on('error', (error) => this.failAll(error));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new Error('the filter body worker stopped'));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(cause: unknown): void {
    for (const settle of this.pending.values()) {
      settle({
        ok: false,
        status: 503,
        name: 'ServiceUnavailable',
        message: `The scheduler filter body could not be parsed now (${String(cause)})`,
      });
    }
    this.pending.clear();
  }
}

/** The error to answer a failed parse with. */
export function parseError(reply: ParsedBody & { ok: false }): ClimateError {
  return new ClimateError(reply.status, reply.name, reply.message);
}
