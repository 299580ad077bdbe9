import { createHmac } from 'node:crypto';

/** The headers a receiver reads; the signature covers the timestamp and the raw body. */
export const SIGNATURE_HEADER = 'X-Climate-Signature';
export const TIMESTAMP_HEADER = 'X-Climate-Timestamp';

/**
 * `sha256=<hex>`: HMAC-SHA256 with the shared secret of `<timestamp>.<body>`, the
 * timestamp in whole seconds since the epoch as sent in X-Climate-Timestamp. Covering the
 * timestamp lets a receiver refuse an old delivery replayed by someone who captured it.
 */
export function signature(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `sha256=${mac}`;
}

export interface WebhookMessage {
  message_id: string;
  event_type: string;
}

/** Every header of one POST; `at` is when it is sent (a repeat is signed anew). */
export function webhookHeaders(
  secret: string,
  message: WebhookMessage,
  body: string,
  at: Date,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'climate-webhooks',
    'X-Climate-Event': message.event_type,
    'X-Climate-Message-Id': message.message_id,
    [TIMESTAMP_HEADER]: String(timestamp),
    [SIGNATURE_HEADER]: signature(secret, timestamp, body),
  };
}
