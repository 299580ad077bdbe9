import { formatTimestamp, formatWireDate, parseInputDate } from './dates.js';
import { InvalidDate } from './errors.js';

const now = new Date('2030-05-06T07:08:09.123Z');

describe('parseInputDate', () => {
  it.each([
    ['2013-12-1 16:07', '2013-12-01T16:07:00.000Z'],
    ['2050-1-1 9:5', '2050-01-01T09:05:00.000Z'],
    ['2050-12-26 12:00', '2050-12-26T12:00:00.000Z'],
    ['now', '2030-05-06T07:08:00.000Z'],
    ['2050-12-26T12:00:00Z', '2050-12-26T12:00:00.000Z'],
    ['2050-12-26T14:30:15+02:00', '2050-12-26T12:30:15.000Z'],
    ['2050-12-26T12:00:00.250-01:30', '2050-12-26T13:30:00.250Z'],
  ])('should parse %s when it is a supported format', (input, expected) => {
    expect(parseInputDate(input, now).toISOString()).toBe(expected);
  });

  it.each([
    'Bogus-date 13:13',
    '2050-13-01 10:00',
    '2050-02-30 10:00',
    '2050-01-01 24:00',
    '2050-01-01',
    '2050-12-26T12:00:00',
    '',
    '9999-12-31T23:00:00-02:00',
  ])('should reject %p with the Blazar message when it is not a date', (input) => {
    expect(() => parseInputDate(input, now)).toThrow(InvalidDate);
    expect(() => parseInputDate(input, now)).toThrow(
      `${input} is an invalid date. Required format: %Y-%m-%d %H:%M`,
    );
  });

  it('should reject a non-string when the value is a number', () => {
    expect(() => parseInputDate(42, now)).toThrow(InvalidDate);
  });
});

describe('formatting', () => {
  it('should render wire dates with microseconds when formatting lease dates', () => {
    expect(formatWireDate(new Date('2017-12-26T12:00:00.000Z'))).toBe('2017-12-26T12:00:00.000000');
    expect(formatWireDate(new Date('2017-12-26T12:00:00.456Z'))).toBe('2017-12-26T12:00:00.456000');
  });

  it('should render timestamps with a space when formatting created_at', () => {
    expect(formatTimestamp(new Date('2017-12-27T10:00:00.900Z'))).toBe('2017-12-27 10:00:00');
    expect(formatTimestamp(null)).toBeNull();
  });
});
