import type { Provider, Type } from '@nestjs/common';
import type { ResourcePlugin } from './resource-plugin.js';

/**
 * What one resource type's folder contributes to Climate: its plugin, the providers and
 * routes that serve it, and its reservation's OpenAPI schemas. The plugin list
 * (`plugin-list.ts`) is a list of these; PluginsModule and the lease schemas read it.
 */
export interface ResourceType {
  /** The ResourcePlugin class; a provider of the plugins module. */
  plugin: Type<ResourcePlugin>;
  /** Everything else the type's code injects (repositories, movers, its network port). */
  providers: Provider[];
  /** Its own routes, if any. */
  controllers?: Type[];
  /** Providers of the type that processes above use (the manager's listeners, sweeps). */
  exports?: Type[];
  /** The reservation in a lease request and in a lease, as the OpenAPI document shows it. */
  schemas: { request: Type; response: Type };
}
