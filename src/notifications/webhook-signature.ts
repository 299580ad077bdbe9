import { createHash, createHmac } from 'node:crypto';

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

/**
 * X-Climate-Delivery-Id: one notification to one receiver, the same on every repeat
 * (whichever manager sends it) and different for each receiver, so a receiver drops a
 * repeat by it. A UUID-shaped hash of the receiver's URL and the message id.
 */
export function deliveryId(receiverUrl: string, messageId: string): string {
  const hex = createHash('sha256').update(`${receiverUrl}\n${messageId}`).digest('hex');
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    hex.slice(12, 16),
    hex.slice(16, 20),
    hex.slice(20, 32),
  ].join('-');
}

/** Every header of one POST; `at` is when it is sent (a repeat is signed anew). */
export function webhookHeaders(
  secret: string,
  message: WebhookMessage,
  receiverUrl: string,
  body: string,
  at: Date,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'climate-webhooks',
    'X-Climate-Event': message.event_type,
    'X-Climate-Message-Id': message.message_id,
    'X-Climate-Delivery-Id': deliveryId(receiverUrl, message.message_id),
    [TIMESTAMP_HEADER]: String(timestamp),
    [SIGNATURE_HEADER]: signature(secret, timestamp, body),
  };
}
