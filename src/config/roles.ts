import type { Config } from './config.js';

/**
 * The one role gate: whether this process does the manager's work (ROLE=manager or all).
 * Listeners (the Nova notifications) follow it alone; periodic jobs follow it and
 * MANAGER_TIMER too (tests turn the timers off and call the jobs themselves).
 */
export function runsManager(config: Pick<Config, 'role'>): boolean {
  return config.role !== 'api';
}

/** Whether this process runs the manager's periodic jobs on their timers. */
export function runsManagerTimers(config: Pick<Config, 'role' | 'managerTimer'>): boolean {
  return runsManager(config) && config.managerTimer;
}
