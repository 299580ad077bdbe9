import { SettingError } from '../config/setting-error.js';
import { ClimateError, UnsupportedResourceType } from '../common/errors.js';
import type { ResourcePlugin } from './resource-plugin.js';

export class PluginConfigurationError extends SettingError {}

/**
 * A plugin action that outlived its time limit: the attempt has failed (504), but the
 * action may still be running. `settled` resolves once it has really stopped, so that
 * whoever retries can wait for it instead of overlapping it.
 */
export class PluginTimeout extends ClimateError {
  constructor(
    message: string,
    readonly settled: Promise<void>,
  ) {
    super(504, 'PluginTimeout', message);
  }
}

/**
 * Wraps a plugin call: time limit, and errors re-thrown with the plugin's name and the
 * original as cause. A ClimateError keeps its status (a 502 from Nova stays a 502).
 */
export async function callPlugin<T>(
  plugin: ResourcePlugin,
  action: string,
  fn: () => Promise<T>,
  timeoutMs: number,
): Promise<T> {
  // Called right away; a synchronous throw becomes a rejection.
  const running = (async () => fn())();
  const settled = running.then(
    () => undefined,
    () => undefined,
  );
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const message = `${plugin.resourceType} ${action} timed out after ${timeoutMs} ms`;
      reject(new PluginTimeout(message, settled));
    }, timeoutMs);
  });
  try {
    return await Promise.race([running, timeout]);
  } catch (error) {
    if (error instanceof PluginTimeout) throw error;
    if (error instanceof Error && error.message.startsWith(plugin.resourceType)) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    const message = `${plugin.resourceType} ${action} failed: ${reason}`;
    if (error instanceof ClimateError) {
      throw new ClimateError(error.status, error.errorName, message, { cause: error });
    }
    throw new Error(message, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** The enabled plugins, by resource type, built from the PLUGINS setting. */
export class PluginRegistry {
  private readonly byType = new Map<string, ResourcePlugin>();

  constructor(available: readonly ResourcePlugin[], enabled: readonly string[]) {
    const known = new Map<string, ResourcePlugin>();
    for (const plugin of available) {
      if (known.has(plugin.resourceType)) {
        throw new PluginConfigurationError(
          `Two plugins claim the resource type ${plugin.resourceType}; keep one.`,
        );
      }
      if (plugin.prepare === undefined && plugin.reserve === undefined) {
        throw new PluginConfigurationError(
          `The ${plugin.resourceType} plugin has neither prepare nor reserve: a create could not allocate.`,
        );
      }
      known.set(plugin.resourceType, plugin);
    }
    for (const type of enabled) {
      const plugin = known.get(type);
      if (plugin === undefined) {
        const choices = [...known.keys()].join(', ') || 'none';
        throw new PluginConfigurationError(
          `PLUGINS names ${type}, which is not a known resource type (available: ${choices}).`,
        );
      }
      if (this.byType.has(type)) {
        throw new PluginConfigurationError(`PLUGINS names ${type} twice; list it once.`);
      }
      this.byType.set(type, plugin);
    }
  }

  /** The plugin for a type, or the 400 Blazar answers for an unsupported type. */
  get(type: string): ResourcePlugin {
    const plugin = this.byType.get(type);
    if (plugin === undefined) throw new UnsupportedResourceType(type);
    return plugin;
  }

  types(): string[] {
    return [...this.byType.keys()];
  }

  all(): ResourcePlugin[] {
    return [...this.byType.values()];
  }
}
