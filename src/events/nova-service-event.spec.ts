import { readServerActive, readServiceUpdate } from './nova-service-event.js';

/** A service.update as Nova sends it through oslo.messaging (versioned, envelope 2.0). */
function novaMessage(data: Record<string, unknown>, eventType = 'service.update'): string {
  return JSON.stringify({
    'oslo.version': '2.0',
    'oslo.message': JSON.stringify({
      message_id: 'c0d9f4a2-2e0c-4f4e-9c4f-6f0e8f3d1a11',
      publisher_id: 'nova-compute:fake-2',
      event_type: eventType,
      priority: 'INFO',
      timestamp: '2026-11-23 10:00:00.000000',
      payload: {
        'nova_object.name': 'ServiceStatusPayload',
        'nova_object.namespace': 'nova',
        'nova_object.version': '1.1',
        'nova_object.data': {
          host: 'fake-2',
          binary: 'nova-compute',
          topic: 'compute',
          disabled: false,
          disabled_reason: null,
          forced_down: false,
          ...data,
        },
      },
    }),
  });
}

describe('readServiceUpdate', () => {
  it('should read a forced-down or disabled compute service as down, and an enabled one as up', () => {
    expect(readServiceUpdate(novaMessage({ forced_down: true }))).toEqual({
      host: 'fake-2',
      down: true,
    });
    expect(
      readServiceUpdate(novaMessage({ disabled: true, disabled_reason: 'disk failure' })),
    ).toEqual({ host: 'fake-2', down: true });
    expect(readServiceUpdate(Buffer.from(novaMessage({})))).toEqual({
      host: 'fake-2',
      down: false,
    });
  });

  it('should read a bare notification without the oslo envelope', () => {
    const bare = JSON.parse(JSON.parse(novaMessage({ forced_down: true }))['oslo.message']);
    expect(readServiceUpdate(JSON.stringify(bare))).toEqual({ host: 'fake-2', down: true });
  });

  it('should not count a service that Climate disabled itself, unless it is also forced down', () => {
    const climate = { disabled: true, disabled_reason: 'climate: powered off by power plan' };
    expect(readServiceUpdate(novaMessage(climate))).toEqual({ ignored: 'disabled by Climate' });
    expect(readServiceUpdate(novaMessage({ ...climate, forced_down: true }))).toEqual({
      host: 'fake-2',
      down: true,
    });
  });

  it.each([
    ['not json', { ignored: 'not a JSON object' }],
    ['[1]', { ignored: 'not a JSON object' }],
    ['{"oslo.message": "nope"}', { ignored: 'oslo.message is not a JSON object' }],
    [novaMessage({}, 'instance.create.end'), { ignored: 'not a service.update' }],
    [novaMessage({ binary: 'nova-scheduler' }), { ignored: 'not a nova-compute service' }],
    [novaMessage({ host: '' }), { ignored: 'no host' }],
    [
      '{"event_type": "service.update", "payload": {}}',
      { ignored: 'no nova_object.data in the payload' },
    ],
  ])('should ignore %s', (body, expected) => {
    expect(readServiceUpdate(body)).toEqual(expected);
  });
});

describe('readServerActive', () => {
  const uuid = '7d3e1f7a-0b5c-4a8e-9d51-2f1c0e6b9a10';
  it.each([
    ['instance.create.end', { uuid, state: 'active' }, uuid],
    ['instance.update', { uuid, state: 'active' }, uuid],
    ['instance.update', { uuid, state: 'building' }, null],
    ['instance.create.start', { uuid, state: 'building' }, null],
    ['instance.shelve.end', { uuid, state: 'shelved_offloaded' }, null],
    ['instance.update', { state: 'active' }, null],
    ['service.update', { host: 'fake-2', binary: 'nova-compute' }, null],
  ])('should read %s with %j as %s', (type, data, expected) => {
    expect(readServerActive(novaMessage(data, type))).toBe(expected);
  });

  it('should read a bare notification and ignore what is not JSON', () => {
    const bare = JSON.stringify({
      event_type: 'instance.create.end',
      payload: { 'nova_object.data': { uuid, state: 'active' } },
    });
    expect(readServerActive(bare)).toBe(uuid);
    expect(readServerActive('not json')).toBeNull();
    expect(readServerActive('{"oslo.message": "[1]"}')).toBeNull();
  });
});
