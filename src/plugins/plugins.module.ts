import { DynamicModule, Global, Module } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { PhysicalHostPlugin } from './physical-host/physical-host.plugin.js';
import { PluginRegistry } from './plugin-registry.js';
import { SCHEDULING_RULES } from './scheduling.js';
import { AllocationsRepository } from './physical-host/host-allocations.repository.js';
import { HostMover } from './physical-host/host-mover.js';
import { PoolSync } from './physical-host/pool-sync.js';
import { ClaimsController } from './virtual-instance/claims.controller.js';
import { ClaimsService } from './virtual-instance/claims.service.js';
import { InstancePool } from './virtual-instance/instance-pool.js';
import { InstanceUpkeep } from './virtual-instance/instance-upkeep.js';
import { SlotMover } from './virtual-instance/slot-mover.js';
import { SlotsRepository } from './virtual-instance/slots.repository.js';
import { VirtualInstancePlugin } from './virtual-instance/virtual-instance.plugin.js';
import { RESOURCE_PLUGINS, type ResourcePlugin } from './resource-plugin.js';
import { FlavorInstancePlugin } from './flavor-instance/flavor-instance.plugin.js';

/**
 * The resource plugins Climate ships, each with the code of its own type (physical
 * hosts: moving whole-host allocations; instance slots: slots, claims, the instance
 * pool), plus any `extra` ones (test doubles); and the registry of those PLUGINS enables.
 * The healing and periodic upkeep that dispatch to them are the manager's (events/).
 */
@Global()
@Module({})
export class PluginsModule {
  static forRoot(extra: ResourcePlugin[] = []): DynamicModule {
    return {
      module: PluginsModule,
      controllers: [ClaimsController],
      providers: [
        PhysicalHostPlugin,
        AllocationsRepository,
        PoolSync,
        HostMover,
        VirtualInstancePlugin,
        ClaimsService,
        InstancePool,
        InstanceUpkeep,
        SlotMover,
        SlotsRepository,
        FlavorInstancePlugin,
        {
          // What the enabled types say in the scheduler filter, in PLUGINS order.
          provide: SCHEDULING_RULES,
          inject: [PluginRegistry],
          useFactory: (registry: PluginRegistry) => registry.all().filter((p) => p.schedule),
        },
        {
          provide: RESOURCE_PLUGINS,
          inject: [PhysicalHostPlugin, VirtualInstancePlugin, FlavorInstancePlugin],
          useFactory: (
            host: PhysicalHostPlugin,
            instance: VirtualInstancePlugin,
            flavor: FlavorInstancePlugin,
          ): ResourcePlugin[] => [host, instance, flavor, ...extra],
        },
        {
          provide: PluginRegistry,
          inject: [RESOURCE_PLUGINS, CONFIG],
          useFactory: (available: ResourcePlugin[], config: Config) =>
            new PluginRegistry(available, config.plugins),
        },
      ],
      // InstanceUpkeep: the Nova listener shelves a server reserved for later at once.
      exports: [PluginRegistry, SCHEDULING_RULES, PoolSync, InstanceUpkeep],
    };
  }
}
