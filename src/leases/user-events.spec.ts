import { toUserEventWire, toUserEvents } from './user-events.js';

const now = new Date('2040-01-01T10:20:30Z');

describe('user-defined events', () => {
  it('should take null or an absent list as none', () => {
    expect(toUserEvents(undefined, now)).toEqual([]);
    expect(toUserEvents(null, now)).toEqual([]);
    expect(toUserEvents([], now)).toEqual([]);
  });

  it.each([
    [{ event_type: 'n', event_date: '2040-01-02 03:04' }, 'n', '2040-01-02T03:04:00.000Z', null],
    [{ event_type: 'n', time: 'now', status: 'UNDONE' }, 'n', '2040-01-01T10:20:00.000Z', 'UNDONE'],
    [{ event_type: 'n', event_date: '' }, 'n', null, null],
    [{ colour: 'red' }, null, null, null],
    [
      { time: '2040-01-02T03:04:00+01:00', event_date: 'ignored' },
      null,
      '2040-01-02T02:04:00.000Z',
      null,
    ],
  ])(
    'should keep the type, time and status of %j and drop other keys',
    (event, type, time, status) => {
      const [stored] = toUserEvents([event], now);
      expect(stored).toEqual({
        id: expect.any(String),
        event_type: type,
        time,
        status,
        created_at: now.toISOString(),
      });
    },
  );

  it.each([
    ['x', 'events must be a list'],
    [[null], 'each event must be an object'],
    [[[1]], 'each event must be an object'],
    [[{ event_type: 1 }], 'events[0].event_type must be a string'],
    [[{}, { status: 's'.repeat(256) }], 'events[1].status must be a string'],
    [[{ event_date: 'soon' }], 'soon is an invalid date'],
    [Array.from({ length: 51 }, () => ({})), 'at most 50'],
  ])('should refuse %j with a 400 naming the problem', (events, message) => {
    expect(() => toUserEvents(events, now)).toThrow(message);
  });

  it('should show a stored event in the shape of the lease events', () => {
    const [stored] = toUserEvents([{ event_type: 'n', event_date: '2040-01-02 03:04' }], now);
    expect(toUserEventWire('lease-1', stored)).toEqual({
      id: stored.id,
      lease_id: 'lease-1',
      event_type: 'n',
      time: '2040-01-02T03:04:00.000000',
      status: null,
      last_error: null,
      created_at: '2040-01-01 10:20:30',
      updated_at: null,
    });
  });
});
