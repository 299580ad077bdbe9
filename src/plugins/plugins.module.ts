import { DynamicModule, Global, Module } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { PluginRegistry } from './plugin-registry.js';
import { RESOURCE_TYPES } from './plugin-list.js';
import { SCHEDULING_RULES } from './scheduling.js';
import { RESOURCE_PLUGINS, type ResourcePlugin } from './resource-plugin.js';

/**
 * The resource plugins Climate ships (the plugin list: each type's folder gives its
 * plugin, providers and routes), plus any `extra` ones (test doubles); and the registry
 * of those PLUGINS enables. The healing and periodic upkeep that dispatch to them are
 * the manager's (events/).
 */
@Global()
@Module({})
export class PluginsModule {
  static forRoot(extra: ResourcePlugin[] = []): DynamicModule {
    const plugins = RESOURCE_TYPES.map((t) => t.plugin);
    return {
      module: PluginsModule,
      controllers: RESOURCE_TYPES.flatMap((t) => t.controllers ?? []),
      providers: [
        ...plugins,
        ...RESOURCE_TYPES.flatMap((t) => t.providers),
        {
          // What the enabled types say in the scheduler filter, in PLUGINS order.
          provide: SCHEDULING_RULES,
          inject: [PluginRegistry],
          useFactory: (registry: PluginRegistry) => registry.all().filter((p) => p.schedule),
        },
        {
          provide: RESOURCE_PLUGINS,
          inject: plugins,
          useFactory: (...shipped: ResourcePlugin[]): ResourcePlugin[] => [...shipped, ...extra],
        },
        {
          provide: PluginRegistry,
          inject: [RESOURCE_PLUGINS, CONFIG],
          useFactory: (available: ResourcePlugin[], config: Config) =>
            new PluginRegistry(available, config.plugins),
        },
      ],
      exports: [
        PluginRegistry,
        SCHEDULING_RULES,
        ...RESOURCE_TYPES.flatMap((t) => t.exports ?? []),
      ],
    };
  }
}
