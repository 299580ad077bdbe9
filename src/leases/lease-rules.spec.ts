import { InvalidInput } from '../common/errors.js';
import { beforeEndTime, checkNewWindow, planDateChange, shiftBeforeEnd } from './lease-rules.js';

const d = (s: string) => new Date(`${s}Z`);
const now = d('2030-01-01T12:00:30');

describe('checkNewWindow', () => {
  it.each([
    [d('2030-01-01T12:00:00'), d('2030-01-01T13:00:00'), null],
    [
      d('2030-01-01T11:59:00'),
      d('2030-01-01T13:00:00'),
      'Start date must be later than current date',
    ],
    [d('2030-01-02T00:00:00'), d('2030-01-02T00:00:00'), 'End date must be later than start date.'],
    [d('2030-01-02T00:00:00'), d('2030-01-01T23:00:00'), 'End date must be later than start date.'],
  ])('should check start %s end %s', (start, end, message) => {
    const run = () => checkNewWindow({ start, end }, now);
    if (message === null) expect(run).not.toThrow();
    else expect(run).toThrow(message);
  });
});

describe('beforeEndTime', () => {
  const window = { start: d('2030-01-02T00:00:00'), end: d('2030-01-02T10:00:00') };
  it('should default to minutes before the end when none is requested', () => {
    expect(beforeEndTime(window, null, 60)).toEqual(d('2030-01-02T09:00:00'));
  });
  it('should clamp to the start when the lease is shorter than the offset', () => {
    expect(beforeEndTime(window, null, 24 * 60)).toEqual(window.start);
  });
  it('should create no event when the offset is zero', () => {
    expect(beforeEndTime(window, null, 0)).toBeNull();
  });
  it('should take a requested time strictly inside the lease', () => {
    expect(beforeEndTime(window, d('2030-01-02T05:00:00'), 60)).toEqual(d('2030-01-02T05:00:00'));
  });
  it.each([window.start, window.end, d('2030-01-03T00:00:00')])(
    'should refuse %s when it is not strictly inside the lease',
    (at) => {
      expect(() => beforeEndTime(window, at, 60)).toThrow('Datetime is out of lease limits');
      expect(() => beforeEndTime(window, at, 60)).toThrow(InvalidInput);
    },
  );
});

describe('planDateChange', () => {
  const current = { start: d('2030-01-02T00:00:00'), end: d('2030-01-03T00:00:00') };
  const base = { current, started: false, ended: false, now };

  it('should keep the window when no date moves', () => {
    expect(planDateChange({ ...base, start: current.start })).toBe(current);
  });
  it('should move both dates of a pending lease', () => {
    const next = { start: d('2030-01-05T00:00:00'), end: d('2030-01-06T00:00:00') };
    expect(planDateChange({ ...base, ...next })).toEqual(next);
  });
  it.each([
    [
      { start: d('2030-01-01T11:00:00') },
      false,
      false,
      'Start date must be later than current date',
    ],
    [
      { start: d('2030-01-02T01:00:00') },
      true,
      false,
      'Cannot modify the start date of already started leases',
    ],
    [{ end: d('2030-01-04T00:00:00') }, true, true, 'Terminated leases can only be renamed'],
    [
      { end: d('2030-01-01T11:00:00') },
      true,
      false,
      'End date must be later than current and start date',
    ],
    [
      { end: d('2030-01-01T23:00:00') },
      false,
      false,
      'End date must be later than current and start date',
    ],
  ])('should refuse %j (started %s, ended %s)', (next, started, ended, message) => {
    expect(() => planDateChange({ ...base, ...next, started, ended })).toThrow(message);
  });
  it('should let an active lease end later', () => {
    const end = d('2030-01-04T00:00:00');
    expect(planDateChange({ ...base, started: true, end })).toEqual({ start: current.start, end });
  });
});

describe('shiftBeforeEnd', () => {
  it('should keep the distance from the end when the end moves', () => {
    const next = { start: d('2030-01-02T00:00:00'), end: d('2030-01-04T00:00:00') };
    expect(shiftBeforeEnd(d('2030-01-02T23:00:00'), d('2030-01-03T00:00:00'), next)).toEqual(
      d('2030-01-03T23:00:00'),
    );
  });
  it('should clamp to the start when the lease gets shorter than the distance', () => {
    const next = { start: d('2030-01-02T00:00:00'), end: d('2030-01-02T00:30:00') };
    expect(shiftBeforeEnd(d('2030-01-02T23:00:00'), d('2030-01-03T00:00:00'), next)).toEqual(
      next.start,
    );
  });
});
