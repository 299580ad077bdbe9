import { summarize } from '../bench/summary';

const figure = (label: string, p50: number, p99 = p50 * 2) => ({
  label,
  runs: 10,
  p50,
  p99,
  statements: 2,
});

function run(hosts: number, create: number, plan: number) {
  return {
    machine: 'test',
    at: '2026-11-26T00:00:00Z',
    storm: [],
    results: [
      {
        hosts,
        shape: 'today' as const,
        seedSeconds: 1,
        claimsPerSecond: 1,
        throughput: {
          clients: 64,
          creates: 100,
          seconds: 1,
          perSecond: create * 100,
          nodeCpuMs: create,
          clientCpuMs: 0,
          postgresCpuMs: create * 2,
          statements: 2,
        },
        figures: [
          figure('lease create, physical:host min=max=1', create),
          figure(
            `power plan run, a lease created since (${(plan / create).toFixed(1)}x create)`,
            plan,
          ),
        ],
      },
    ],
  };
}

describe('bench summary', () => {
  it('should give each row the median of the runs and the median of their ratios', () => {
    const table = summarize([run(1000, 2, 8), run(1000, 4, 4), run(1000, 3, 9)]);
    // p50 8, 4, 9 → 8; p99 16, 8, 18 → 16; ratios 4, 1, 3 → 3 (not 8 / 3).
    expect(table).toContain('| power plan run, a lease created since | 8.00 / 16.0 (3.0×) |');
    expect(table).toContain('| lease create, physical:host min=max=1 | 3.00 / 6.00 |');
    expect(table).toContain('| CPU per create, Node / PostgreSQL (ms) | 3.00 / 6.00 |');
    expect(table).toContain('Runs per size: 3');
  });

  it('should put each fleet size in its own column', () => {
    const table = summarize([run(1000, 2, 4), run(100000, 2, 20)]);
    expect(table).toContain('| 1,000 hosts | 100,000 hosts |');
    expect(table).toContain(
      '| power plan run, a lease created since | 4.00 / 8.00 (2.0×) | 20.0 / 40.0 (10.0×) |',
    );
  });
});
