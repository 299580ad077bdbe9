import { DynamicModule, Global, Module } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { PhysicalHostPlugin } from './physical-host/physical-host.plugin.js';
import { PluginRegistry } from './plugin-registry.js';
import { InstanceUpkeep } from './virtual-instance/instance-upkeep.js';
import { VirtualInstancePlugin } from './virtual-instance/virtual-instance.plugin.js';
import { RESOURCE_PLUGINS, type ResourcePlugin } from './resource-plugin.js';

/**
 * The resource plugins Climate ships, plus any `extra` ones (test doubles), and the
 * registry of those PLUGINS enables.
 */
@Global()
@Module({})
export class PluginsModule {
  static forRoot(extra: ResourcePlugin[] = []): DynamicModule {
    return {
      module: PluginsModule,
      providers: [
        PhysicalHostPlugin,
        VirtualInstancePlugin,
        InstanceUpkeep,
        {
          provide: RESOURCE_PLUGINS,
          inject: [PhysicalHostPlugin, VirtualInstancePlugin],
          useFactory: (
            host: PhysicalHostPlugin,
            instance: VirtualInstancePlugin,
          ): ResourcePlugin[] => [host, instance, ...extra],
        },
        {
          provide: PluginRegistry,
          inject: [RESOURCE_PLUGINS, CONFIG],
          useFactory: (available: ResourcePlugin[], config: Config) =>
            new PluginRegistry(available, config.plugins),
        },
      ],
      exports: [PluginRegistry],
    };
  }
}
