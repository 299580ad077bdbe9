export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** The answer of `work`, or a rejection after `ms`; the work itself is not cancelled. */
export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`${what}: no answer in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One run at a time; callers during a run share it. A database that stopped answering is
 * then asked once, not once per probe or scrape (each would hold a pooled connection).
 */
export class SingleFlight<T> {
  private current: Promise<T> | null = null;

  run(fn: () => Promise<T>): Promise<T> {
    if (this.current === null) {
      this.current = fn().finally(() => {
        this.current = null;
      });
    }
    return this.current;
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
