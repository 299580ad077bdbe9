import { envelope, osloTimestamp } from './envelope.js';

describe('envelope', () => {
  it('should format the timestamp as oslo does when given a UTC instant', () => {
    expect(osloTimestamp(new Date('2030-01-02T03:04:05.678Z'))).toBe('2030-01-02 03:04:05.678000');
  });

  it('should wrap the notification as a JSON string in the oslo 2.0 envelope', () => {
    const body = envelope(
      {
        id: '1',
        message_id: 'b4a5c6d7-0000-4000-8000-000000000001',
        event_type: 'lease.create',
        payload: { id: 'l1', lease_id: 'l1' },
        created_at: new Date('2030-01-01T00:00:00Z'),
      },
      'climate.lease',
    );
    expect(Object.keys(body)).toEqual(['oslo.version', 'oslo.message']);
    expect(body['oslo.version']).toBe('2.0');
    expect(JSON.parse(body['oslo.message'])).toEqual({
      message_id: 'b4a5c6d7-0000-4000-8000-000000000001',
      publisher_id: 'climate.lease',
      event_type: 'lease.create',
      priority: 'INFO',
      payload: { id: 'l1', lease_id: 'l1' },
      timestamp: '2030-01-01 00:00:00.000000',
    });
  });
});
