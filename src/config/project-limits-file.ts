import { readFileSync } from 'node:fs';

/** One project's own limits; a key left out takes the global setting, -1 is no limit. */
export interface ProjectLimitOverride {
  maxHosts?: number;
  maxHostHours?: number;
}

const KEYS: Record<string, keyof ProjectLimitOverride> = {
  max_hosts: 'maxHosts',
  max_host_hours: 'maxHostHours',
};

/**
 * Reads PROJECT_LIMITS_FILE: `{"<project id>": {"max_hosts": 4, "max_host_hours": -1}}`.
 * Returns the overrides, or the problems found (each naming the file).
 */
export function readProjectLimitsFile(path: string): {
  limits: Record<string, ProjectLimitOverride>;
  problems: string[];
} {
  const where = `PROJECT_LIMITS_FILE=${path}`;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    return {
      limits: {},
      problems: [`${where}: cannot be read as JSON (${(error as Error).message})`],
    };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { limits: {}, problems: [`${where}: must be a JSON object keyed by project id`] };
  }
  const limits: Record<string, ProjectLimitOverride> = {};
  const problems: string[] = [];
  for (const [project, values] of Object.entries(raw)) {
    if (typeof values !== 'object' || values === null || Array.isArray(values)) {
      problems.push(`${where}: ${project} must map to an object such as {"max_hosts": 4}`);
      continue;
    }
    const override: ProjectLimitOverride = {};
    for (const [key, value] of Object.entries(values as Record<string, unknown>)) {
      const field = KEYS[key];
      if (field === undefined) {
        problems.push(`${where}: ${project}.${key} is not a limit (use max_hosts, max_host_hours)`);
      } else if (!Number.isInteger(value) || (value as number) < -1) {
        problems.push(`${where}: ${project}.${key} must be a whole number, -1 for no limit`);
      } else {
        override[field] = value as number;
      }
    }
    limits[project] = override;
  }
  return { limits, problems };
}
