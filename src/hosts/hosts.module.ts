import { Module } from '@nestjs/common';
import { PoolsModule } from '../pools/pools.module.js';
import { HostPowerPort } from './host-power.js';
import { HostPropertiesService } from './host-properties.service.js';
import { HostsController } from './hosts.controller.js';
import { HostsService } from './hosts.service.js';

/**
 * Hosts of the reservation pool and their properties: every /v1/os-hosts route. The power
 * plan fills HostPowerPort (PUT /v1/os-hosts/{id}/power).
 */
@Module({
  imports: [PoolsModule],
  controllers: [HostsController],
  providers: [HostsService, HostPropertiesService, HostPowerPort],
  exports: [HostPowerPort],
})
export class HostsModule {}
