import { Global, Module } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { PluginRegistry } from './plugin-registry.js';
import { RESOURCE_PLUGINS, type ResourcePlugin } from './resource-plugin.js';

/**
 * The registry of enabled resource plugins. Plugins are provided under RESOURCE_PLUGINS
 * by the app module (see app.module.ts); PLUGINS chooses which are enabled.
 */
@Global()
@Module({
  providers: [
    {
      provide: PluginRegistry,
      inject: [RESOURCE_PLUGINS, CONFIG],
      useFactory: (available: ResourcePlugin[], config: Config) =>
        new PluginRegistry(available, config.plugins),
    },
  ],
  exports: [PluginRegistry],
})
export class PluginsModule {}
