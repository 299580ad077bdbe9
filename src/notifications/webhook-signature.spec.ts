import { createHmac } from 'node:crypto';
import { deliveryId, signature, webhookHeaders } from './webhook-signature.js';

describe('webhook signature', () => {
  it('should sign the timestamp and the raw body with HMAC-SHA256 when given a secret', () => {
    const body = '{"event_type":"lease.create"}';
    const expected = createHmac('sha256', 'secret-0123456789')
      .update(`1893456000.${body}`)
      .digest('hex');
    expect(signature('secret-0123456789', 1893456000, body)).toBe(`sha256=${expected}`);
  });

  it('should give another signature when the timestamp, body or secret differ', () => {
    const base = signature('secret-0123456789', 1893456000, '{}');
    expect(signature('secret-0123456789', 1893456001, '{}')).not.toBe(base);
    expect(signature('secret-0123456789', 1893456000, '{ }')).not.toBe(base);
    expect(signature('secret-0123456780', 1893456000, '{}')).not.toBe(base);
  });

  it('should send the message id, event type and a timestamp in whole seconds when posting', () => {
    const headers = webhookHeaders(
      'secret-0123456789',
      { message_id: 'm-1', event_type: 'lease.update' },
      'https://a.example/hook',
      '{}',
      new Date('2030-01-01T00:00:00.900Z'),
    );
    expect(headers).toEqual({
      'Content-Type': 'application/json',
      'User-Agent': 'climate-webhooks',
      'X-Climate-Event': 'lease.update',
      'X-Climate-Message-Id': 'm-1',
      'X-Climate-Delivery-Id': deliveryId('https://a.example/hook', 'm-1'),
      'X-Climate-Timestamp': '1893456000',
      'X-Climate-Signature': signature('secret-0123456789', 1893456000, '{}'),
    });
  });

  it('should give one delivery id per receiver and message, the same on every repeat', () => {
    const id = deliveryId('https://a.example/hook', 'm-1');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(deliveryId('https://a.example/hook', 'm-1')).toBe(id);
    expect(deliveryId('https://b.example/hook', 'm-1')).not.toBe(id);
    expect(deliveryId('https://a.example/hook', 'm-2')).not.toBe(id);
  });
});
