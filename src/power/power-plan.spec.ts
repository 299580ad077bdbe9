import { needs, offWindows, planHost, readyAt, type HostSituation } from './power-plan.js';

const M = 60_000;
const H = 60 * M;
const settings = { idleMs: 60 * M, leadMs: 10 * M, bootMs: 5 * M };
const idle = (extra: Partial<HostSituation> = {}): HostSituation => ({
  state: 'on',
  changedAt: -10 * H,
  keepOn: false,
  busy: [],
  ...extra,
});

describe('needs', () => {
  it('should widen each busy stretch by the lead time and merge what touches', () => {
    expect(
      needs(
        [
          { start: 2 * H, end: 3 * H },
          { start: 3 * H + 5 * M, end: 4 * H },
          { start: -2 * H, end: -H },
        ],
        0,
        10 * M,
      ),
    ).toEqual([{ start: 2 * H - 10 * M, end: 4 * H }]);
  });
});

describe('the plan of one host', () => {
  it.each([
    ['an idle host with nothing ahead', idle(), 'off', [{ at: 0, to: 'off' }]],
    [
      'an idle host needed in 3 hours',
      idle({ busy: [{ start: 3 * H, end: 4 * H }] }),
      'off',
      [
        { at: 0, to: 'off' },
        { at: 3 * H - 15 * M, to: 'on' },
        { at: 4 * H, to: 'off' },
      ],
    ],
    [
      'an idle host needed in 50 minutes (shorter than the idle time)',
      idle({ busy: [{ start: 50 * M, end: 2 * H }] }),
      'on',
      [{ at: 2 * H, to: 'off' }],
    ],
    ['a host in use now', idle({ busy: [{ start: -H, end: H }] }), 'on', [{ at: H, to: 'off' }]],
    [
      'a host within its lead time',
      idle({ busy: [{ start: 5 * M, end: H }] }),
      'on',
      [{ at: H, to: 'off' }],
    ],
    ['a host kept on', idle({ keepOn: true }), 'on', []],
    [
      'a host switched on 20 minutes ago (it stays on for the idle time)',
      idle({ changedAt: -20 * M }),
      'on',
      [{ at: 40 * M, to: 'off' }],
    ],
    [
      'an off host needed in 30 minutes (more than its boot and lead)',
      idle({ state: 'off', busy: [{ start: 30 * M, end: H }] }),
      'off',
      // Back on at 15 minutes, then on for at least the idle time.
      [
        { at: 15 * M, to: 'on' },
        { at: 75 * M, to: 'off' },
      ],
    ],
    [
      'an off host needed in 10 minutes (within its boot and lead)',
      idle({ state: 'off', busy: [{ start: 10 * M, end: H }] }),
      'on',
      [
        { at: 0, to: 'on' },
        { at: H, to: 'off' },
      ],
    ],
    ['an off host kept on', idle({ state: 'stopping', keepOn: true }), 'on', [{ at: 0, to: 'on' }]],
  ])('should plan %s', (_, host, want, transitions) => {
    const plan = planHost(host, 0, 30 * 24 * H, settings);
    expect(plan.want).toBe(want);
    expect(plan.transitions).toEqual(transitions);
  });

  it('should leave gaps shorter than the idle time on and count the time off', () => {
    const busy = [
      { start: H, end: 2 * H },
      { start: 2 * H + 30 * M, end: 3 * H },
      { start: 6 * H, end: 7 * H },
    ];
    const windows = offWindows(idle({ busy }), 0, settings);
    // On through the first 50 minutes and the 20-minute gap; off 3h..5h45 and from 7h.
    expect(windows).toEqual([
      { start: 3 * H, end: 6 * H - 15 * M },
      { start: 7 * H, end: Infinity },
    ]);
    expect(planHost(idle({ busy }), 0, 8 * H, settings).offMs).toBe(2 * H + 45 * M + H);
  });

  it('should keep an off host off through a gap shorter than the idle time', () => {
    const host = idle({ state: 'off', busy: [{ start: 40 * M, end: H }] });
    expect(offWindows(host, 0, settings)).toEqual([
      { start: 0, end: 25 * M },
      // Back on at 25 minutes, so off again at 85 at the earliest.
      { start: 85 * M, end: Infinity },
    ]);
  });
});

describe('when a host can be ready', () => {
  it.each([
    ['on', null, 0],
    ['off', null, 5 * M],
    ['booting', 3 * M, 3 * M],
    ['booting', -M, 0],
    ['stopping', M, 6 * M],
  ] as const)('should make a %s host (deadline %s) ready at %s', (state, deadline, at) => {
    expect(readyAt(state, deadline, 0, 5 * M)).toBe(at);
  });
});
