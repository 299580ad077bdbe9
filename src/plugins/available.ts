import type { ResourcePlugin } from './resource-plugin.js';

/** Every resource plugin Climate ships; PLUGINS enables a subset. */
export function availablePlugins(): ResourcePlugin[] {
  return [];
}
