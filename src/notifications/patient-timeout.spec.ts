import { patientTimeout, wallTimeout } from './patient-timeout';

describe('patientTimeout', () => {
  let clock = 0;
  const now = () => clock;
  beforeEach(() => {
    jest.useFakeTimers();
    clock = 0;
  });
  afterEach(() => jest.useRealTimers());

  /** Runs the due timers with the wall clock moving as they run. */
  function run(ms: number): void {
    for (let i = 0; i < ms; i += 10) {
      clock += 10;
      jest.advanceTimersByTime(10);
    }
  }

  it('should fire after ms when the loop runs freely', () => {
    const fired = jest.fn();
    patientTimeout(1000, fired, now);
    run(990);
    expect(fired).not.toHaveBeenCalled();
    run(20);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('should count a stretch where the loop could not run as one short step', () => {
    const fired = jest.fn();
    patientTimeout(1000, fired, now);
    run(200);
    // Ten seconds without the CPU: the timer runs late, once.
    clock += 10_000;
    run(50);
    // Counted so far: 200 ms, and the stall as 500.
    run(400);
    expect(fired).not.toHaveBeenCalled();
    run(400);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('should not fire once cancelled', () => {
    const fired = jest.fn();
    const cancel = patientTimeout(100, fired, now);
    run(50);
    cancel();
    run(500);
    expect(fired).not.toHaveBeenCalled();
  });

  it('should fire a wall timeout after ms however late the loop ran, and not once cancelled', () => {
    const fired = jest.fn();
    wallTimeout(1000, fired);
    jest.advanceTimersByTime(999);
    expect(fired).not.toHaveBeenCalled();
    // The check phase: after the poll that reads what arrived.
    jest.advanceTimersByTime(1);
    expect(fired).not.toHaveBeenCalled();
    jest.runOnlyPendingTimers();
    expect(fired).toHaveBeenCalledTimes(1);
    const cancelled = jest.fn();
    const cancel = wallTimeout(100, cancelled);
    jest.advanceTimersByTime(100);
    cancel();
    jest.runOnlyPendingTimers();
    expect(cancelled).not.toHaveBeenCalled();
  });
});
