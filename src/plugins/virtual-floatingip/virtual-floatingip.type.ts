import { KEYSTONE } from '../../compute/trusts.service.js';
import type { KeystoneClient } from '../../compute/keystone.client.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import type { ResourceType } from '../resource-type.js';
import { FloatingIpReservationRequest } from './dto/floatingip-reservation.request.js';
import { FloatingIpReservationResponse } from './dto/floatingip-reservation.response.js';
import { BuiltinNetwork, FLOATING_IP_NETWORK } from './floating-ip-network.js';
import { FloatingIpsController } from './floatingips.controller.js';
import { FloatingIpsRepository } from './floatingips.repository.js';
import { FloatingIpsService } from './floatingips.service.js';
import { Neutron } from './neutron.js';
import { VirtualFloatingIpPlugin } from './virtual-floatingip.plugin.js';

/**
 * `virtual:floatingip`: addresses of an external network, made floating IPs of the
 * lease's project in Neutron while it runs. Neutron is used with COMPUTE_DRIVER=nova;
 * with the builtin driver addresses are booked only (no Neutron, nothing checked).
 */
export const virtualFloatingIpType: ResourceType = {
  plugin: VirtualFloatingIpPlugin,
  providers: [
    FloatingIpsRepository,
    FloatingIpsService,
    {
      provide: FLOATING_IP_NETWORK,
      inject: [CONFIG, KEYSTONE],
      useFactory: (config: Config, keystone: KeystoneClient | null) =>
        config.computeDriver === 'nova' && keystone !== null
          ? new Neutron(keystone)
          : new BuiltinNetwork(),
    },
  ],
  controllers: [FloatingIpsController],
  schemas: { request: FloatingIpReservationRequest, response: FloatingIpReservationResponse },
};
