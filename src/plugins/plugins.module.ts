import { Module } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { PoolsModule } from '../pools/pools.module.js';
import { LeaseRemover } from './lease-remover.js';
import { PluginRegistry } from './plugin-registry.js';
import { RESOURCE_TYPES } from './plugin-list.js';
import { SCHEDULING_RULES } from './scheduling.js';
import { EXTRA_PLUGINS, RESOURCE_PLUGINS, type ResourcePlugin } from './resource-plugin.js';

const shipped = RESOURCE_TYPES.map((t) => t.plugin);

/**
 * The resource plugins Climate ships (the plugin list: each type's folder gives its
 * plugin, providers and routes), plus the app's EXTRA_PLUGINS (test doubles); and the
 * registry of those PLUGINS enables. The healing and periodic upkeep that dispatch to
 * them are the manager's (events/); the lease use cases fill LeaseRemover.
 */
@Module({
  imports: [PoolsModule],
  controllers: RESOURCE_TYPES.flatMap((t) => t.controllers ?? []),
  providers: [
    ...shipped,
    ...RESOURCE_TYPES.flatMap((t) => t.providers),
    LeaseRemover,
    {
      // What the enabled types say in the scheduler filter, in PLUGINS order.
      provide: SCHEDULING_RULES,
      inject: [PluginRegistry],
      useFactory: (registry: PluginRegistry) => registry.all().filter((p) => p.schedule),
    },
    {
      provide: RESOURCE_PLUGINS,
      inject: [EXTRA_PLUGINS, ...shipped],
      useFactory: (extra: ResourcePlugin[], ...own: ResourcePlugin[]): ResourcePlugin[] => [
        ...own,
        ...extra,
      ],
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
    LeaseRemover,
    ...RESOURCE_TYPES.flatMap((t) => t.exports ?? []),
  ],
})
export class PluginsModule {}
