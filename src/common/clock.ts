/**
 * The source of lease time: every date a lease, event or allocation is compared with.
 * Tests inject a FakeClock and move time instead of sleeping. Wall-clock intervals
 * (timeouts, retry back-offs, token cache expiry, id timestamps) use Date.now() on
 * purpose: a moved lease clock must not make a request time out.
 */
export abstract class Clock {
  abstract now(): Date;

  /**
   * The time to compare deadlines that replicas share (event claims) with, or null for
   * the database's own clock: replicas' clocks may disagree, the database's is one.
   */
  shared(): Date | null {
    return this.now();
  }
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }

  override shared(): Date | null {
    return null;
  }
}

export class FakeClock extends Clock {
  constructor(private current = new Date('2030-01-01T00:00:00Z')) {
    super();
  }

  now(): Date {
    return new Date(this.current);
  }

  set(date: Date): void {
    this.current = new Date(date);
  }

  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}
