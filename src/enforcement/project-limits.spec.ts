import { hostHoursByPeriod, HostSpan, peakHosts, periodsOf } from './project-limits.js';

const at = (iso: string) => new Date(`${iso}Z`);
const span = (leaseId: string, start: string, end: string): HostSpan => ({
  leaseId,
  start: at(start),
  end: at(end),
});

describe('project limits', () => {
  it('should find the most hosts held at once within the window when leases overlap in part', () => {
    const spans = [
      span('a', '2030-01-01T00:00', '2030-01-03T00:00'),
      span('b', '2030-01-02T00:00', '2030-01-04T00:00'),
      span('b', '2030-01-02T00:00', '2030-01-04T00:00'),
      span('new', '2030-01-02T12:00', '2030-01-05T00:00'),
    ];
    const peak = peakHosts(spans, span('new', '2030-01-02T12:00', '2030-01-05T00:00'));
    expect(peak).toEqual({ total: 4, own: 1, at: at('2030-01-02T12:00') });
  });

  it('should not count hosts whose lease ends when the window starts', () => {
    const spans = [
      span('a', '2030-01-01T00:00', '2030-01-02T00:00'),
      span('new', '2030-01-02T00:00', '2030-01-03T00:00'),
    ];
    expect(peakHosts(spans, spans[1]).total).toBe(1);
  });

  it('should align 7-day periods on Mondays and list every period a window overlaps', () => {
    // 2030-01-07 is a Monday
    const periods = periodsOf({ start: at('2030-01-06T00:00'), end: at('2030-01-14T00:00') }, 7);
    expect(periods.map((p) => p.start.toISOString().slice(0, 10))).toEqual([
      '2029-12-31',
      '2030-01-07',
    ]);
  });

  it('should clip host-hours to each period and put the fullest period first', () => {
    const spans = [
      span('a', '2030-01-06T12:00', '2030-01-07T12:00'),
      span('new', '2030-01-07T00:00', '2030-01-08T00:00'),
    ];
    const periods = periodsOf({ start: at('2030-01-07T00:00'), end: at('2030-01-08T00:00') }, 7);
    const [worst] = hostHoursByPeriod(spans, periods, 'new');
    expect(worst).toMatchObject({ total: 36, own: 24, start: at('2030-01-07T00:00') });
  });
});
