import { Module } from '@nestjs/common';
import { PoolsModule } from '../pools/pools.module.js';
import { HostPropertiesService } from './host-properties.service.js';
import { HostsController } from './hosts.controller.js';
import { HostsService } from './hosts.service.js';

/** Hosts of the reservation pool and their properties (/v1/os-hosts). */
@Module({
  imports: [PoolsModule],
  controllers: [HostsController],
  providers: [HostsService, HostPropertiesService],
})
export class HostsModule {}
