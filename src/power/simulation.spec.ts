import { simulate, type SimulationOptions } from './simulation.js';

const base: SimulationOptions = {
  hosts: 12,
  days: 21,
  targetUse: 0.5,
  settings: { idleMs: 60 * 60_000, leadMs: 15 * 60_000, bootMs: 10 * 60_000 },
  maxTransitionsPerMinute: 10,
  stepMinutes: 5,
  seed: 7,
  powerPlan: true,
  alwaysOn: 0,
};

describe('the power simulation', () => {
  it('should save host-hours below the idle share, with no lease starting on a host not on', () => {
    const r = simulate(base);
    expect(r.leases).toBeGreaterThan(50);
    expect(r.lateStarts).toBe(0);
    expect(r.savedShare).toBeGreaterThan(0.1);
    expect(r.savedShare).toBeLessThan(1 - r.achievedUse);
  });

  it('should save nothing with every host always on, and repeat itself for a seed', () => {
    expect(simulate({ ...base, powerPlan: false }).savedShare).toBe(0);
    expect(simulate({ ...base, alwaysOn: 12 }).savedShare).toBe(0);
    expect(simulate(base)).toEqual(simulate(base));
  });

  it('should save less the busier the pool', () => {
    const low = simulate({ ...base, targetUse: 0.3 });
    const high = simulate({ ...base, targetUse: 0.9 });
    expect(low.savedShare).toBeGreaterThan(high.savedShare);
  });
});
