/** Typed reads of environment variables, each bad value recorded as a problem. */
export type Env = Record<string, string | undefined>;

export class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  text(name: string, fallback: string): string {
    const value = this.env[name];
    return value === undefined || value === '' ? fallback : value;
  }

  optional(name: string): string | null {
    const value = this.env[name];
    return value === undefined || value === '' ? null : value;
  }

  int(name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || value < min || value > max) {
      this.problems.push(`${name}=${raw}: must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  }

  float(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw.trim()) || value < min || value > max) {
      this.problems.push(`${name}=${raw}: must be a number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!allowed.includes(raw as T)) {
      this.problems.push(`${name}=${raw}: must be one of ${allowed.join(', ')}`);
      return fallback;
    }
    return raw as T;
  }

  list(name: string, fallback: string[]): string[] {
    const raw = this.env[name];
    if (raw === undefined) return fallback;
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
}
