import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/config.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    return (error as ConfigError).problems;
  }
}

describe('usage enforcement settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'climate-limits-'));

  it('should list every bad enforcement variable in one error', () => {
    expect(
      problems({
        MAX_LEASE_DURATION_SECONDS: '0',
        EXTERNAL_SERVICE_URL: 'ftp://x',
        EXTERNAL_SERVICE_TIMEOUT_MS: '5',
        PROJECT_MAX_HOSTS: '-2',
        PROJECT_HOST_HOURS_PERIOD_DAYS: '0',
      }),
    ).toEqual([
      'EXTERNAL_SERVICE_TIMEOUT_MS=5: must be a whole number from 100 to 600000',
      `PROJECT_MAX_HOSTS=-2: must be a whole number from -1 to ${Number.MAX_SAFE_INTEGER}`,
      'PROJECT_HOST_HOURS_PERIOD_DAYS=0: must be a whole number from 1 to 3660',
      'EXTERNAL_SERVICE_URL=ftp://x: must be an http:// or https:// URL',
      'MAX_LEASE_DURATION_SECONDS=0: would refuse every lease; use -1 for no limit',
    ]);
  });

  it('should read per-project overrides from PROJECT_LIMITS_FILE when it is valid', () => {
    const path = join(dir, 'ok.json');
    writeFileSync(path, JSON.stringify({ p1: { max_hosts: 4 }, p2: { max_host_hours: -1 } }));
    const config = loadConfig({ PROJECT_LIMITS_FILE: path });
    expect(config.enforcement.projectLimits).toEqual({
      p1: { maxHosts: 4 },
      p2: { maxHostHours: -1 },
    });
  });

  it('should name each bad entry of PROJECT_LIMITS_FILE when it is not valid', () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ p1: { max_hosts: 1.5, cores: 2 }, p2: 3 }));
    expect(problems({ PROJECT_LIMITS_FILE: path })).toEqual([
      `PROJECT_LIMITS_FILE=${path}: p1.max_hosts must be a whole number, -1 for no limit`,
      `PROJECT_LIMITS_FILE=${path}: p1.cores is not a limit (use max_hosts, max_host_hours)`,
      `PROJECT_LIMITS_FILE=${path}: p2 must map to an object such as {"max_hosts": 4}`,
    ]);
    expect(problems({ PROJECT_LIMITS_FILE: join(dir, 'missing.json') })[0]).toMatch(
      /^PROJECT_LIMITS_FILE=.*missing\.json: cannot be read as JSON/,
    );
  });
});
