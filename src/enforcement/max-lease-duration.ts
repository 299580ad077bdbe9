import type { Config } from '../config/config.js';
import { MaxLeaseDurationException } from './enforcement.errors.js';

/**
 * Blazar's MaxLeaseDurationFilter, pure: a lease (created, or updated to new dates) may
 * last at most `maxLeaseDurationSeconds` from its start to its end, unless its project is
 * exempt. As in Blazar an update is measured from the (new) start, not from now, so an
 * active lease cannot be prolonged past the limit.
 */
export function checkMaxLeaseDuration(
  settings: Config['enforcement'],
  projectId: string,
  window: { start: Date; end: Date },
): void {
  const max = settings.maxLeaseDurationSeconds;
  if (max === -1 || settings.maxLeaseDurationExemptProjects.includes(projectId)) return;
  const seconds = (window.end.getTime() - window.start.getTime()) / 1000;
  if (seconds > max) throw new MaxLeaseDurationException(Math.trunc(seconds), max);
}
