import { Injectable } from '@nestjs/common';
import { patientTimeout } from './patient-timeout.js';

/** How one POST ended; the metric's `result` label. */
export type DeliveryResult = 'delivered' | 'refused' | 'timeout' | 'unreachable';

export interface DeliveryOutcome {
  result: DeliveryResult;
  /** What went wrong, for the log and `webhook_receivers.last_error`. */
  error: string | null;
}

/**
 * Outbound HTTP for webhooks: one POST with a timeout. Any 2xx is delivered; any other
 * status (a redirect too: a signed body is not sent somewhere else) is `refused`. The
 * status decides: once it is in, a body cut short by the timeout changes nothing. The
 * timeout is patient (patientTimeout): a process starved of CPU does not take its own
 * delay for a receiver that did not answer, which would send the notification again.
 */
@Injectable()
export class WebhookSender {
  async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    timeoutMs: number,
  ): Promise<DeliveryOutcome> {
    const controller = new AbortController();
    const cancel = patientTimeout(timeoutMs, () => controller.abort());
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: controller.signal,
      });
      // Read to the end so the connection goes back to the pool; the answer is the status.
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return { result: 'delivered', error: null };
      return { result: 'refused', error: `answered ${res.status}` };
    } catch (err) {
      // By name: errors from fetch may come from another realm (e.g. under jest).
      const name = (err as { name?: string } | null)?.name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        return { result: 'timeout', error: `no answer within ${timeoutMs} ms` };
      }
      return { result: 'unreachable', error: `could not be reached (${causeOf(err)})` };
    } finally {
      cancel();
    }
  }
}

/** fetch says only "fetch failed"; the reason (ECONNREFUSED, …) is in its cause. */
function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}
