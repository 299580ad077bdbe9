import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { patientTimeout, wallTimeout } from './patient-timeout.js';

/** How one POST ended; the metric's `result` label. */
export type DeliveryResult = 'delivered' | 'refused' | 'timeout' | 'unreachable';

export interface DeliveryOutcome {
  result: DeliveryResult;
  /** What went wrong, for the log and `webhook_receivers.last_error`. */
  error: string | null;
}

interface Attempt {
  outcome: DeliveryOutcome;
  /** A kept-alive connection the receiver had already closed: the request never got there. */
  stale: boolean;
}

/** Reset or closed under a request that went out on a reused connection. */
const STALE_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Outbound HTTP for webhooks: one POST with a timeout. Any 2xx is delivered; any other
 * status (a redirect too: a signed body is not sent somewhere else) is `refused`. The
 * status decides: once it is in, the body is drained (bounded) and changes nothing.
 *
 * The timeout is the receiver's time, so that a manager starved of CPU never takes its
 * own delay for a receiver that did not answer (which would send the notification again):
 * - until the request has been handed to the operating system (connecting, writing), it
 *   counts this process's own time (`patientTimeout`);
 * - from then on, the wall clock: the receiver's time to answer;
 * - either way it gives up only after the event loop has read what arrived; node:http
 *   emits the response in the callback that reads it, so an answer that came while the
 *   process waited for the CPU is taken, never timed out. (fetch needs more turns of the
 *   loop after the socket is read: a starved manager aborted answers it already had.)
 * So a timeout means the receiver really took longer than `timeoutMs` to answer.
 */
@Injectable()
export class WebhookSender implements OnApplicationShutdown {
  private readonly agents = {
    http: new HttpAgent({ keepAlive: true }),
    https: new HttpsAgent({ keepAlive: true }),
  };

  onApplicationShutdown(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
  ): Promise<DeliveryOutcome> {
    const first = await this.attempt(url, headers, body, timeoutMs, false);
    // The receiver closed an idle connection as the request went out on it: once more, on
    // a connection of its own (the other idle ones may be closed too).
    if (first.stale) return (await this.attempt(url, headers, body, timeoutMs, true)).outcome;
    return first.outcome;
  }

  private attempt(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
    fresh: boolean,
  ): Promise<Attempt> {
    return new Promise((resolve) => {
      const target = new URL(url);
      const secure = target.protocol === 'https:';
      const payload = Buffer.from(body, 'utf8');
      let answered = false;
      let settled = false;
      let cancel: () => void = () => undefined;
      const settle = (outcome: DeliveryOutcome, stale = false): void => {
        if (settled) return;
        settled = true;
        cancel();
        resolve({ outcome, stale });
      };
      const req: ClientRequest = (secure ? httpsRequest : httpRequest)(target, {
        method: 'POST',
        agent: fresh ? false : secure ? this.agents.https : this.agents.http,
        headers: { ...headers, 'Content-Length': String(payload.length) },
      });
      const giveUp = (): void => {
        if (answered || settled) return;
        settle({ result: 'timeout', error: `no answer within ${timeoutMs} ms` });
        req.destroy();
      };
      cancel = patientTimeout(timeoutMs, giveUp);
      req.on('finish', () => {
        if (answered || settled) return;
        cancel();
        cancel = wallTimeout(timeoutMs, giveUp);
      });
      req.on('response', (res: IncomingMessage) => {
        answered = true;
        drain(res, timeoutMs);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) settle({ result: 'delivered', error: null });
        else settle({ result: 'refused', error: `answered ${status}` });
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (answered) return;
        const stale = req.reusedSocket && STALE_CODES.has(err.code ?? '');
        settle({ result: 'unreachable', error: `could not be reached (${causeOf(err)})` }, stale);
      });
      req.end(payload);
    });
  }
}

/** Reads the answer's body to its end so the connection is reused; a stalled one is cut. */
function drain(res: IncomingMessage, timeoutMs: number): void {
  const cut = setTimeout(() => res.destroy(), timeoutMs);
  res.on('close', () => clearTimeout(cut));
  res.on('error', () => undefined);
  res.resume();
}

function causeOf(err: NodeJS.ErrnoException): string {
  return typeof err.code === 'string' ? err.code : err.message;
}
