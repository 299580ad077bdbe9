import type { ResourceType } from '../resource-type.js';
import { ClaimsController } from './claims.controller.js';
import { ClaimsService } from './claims.service.js';
import { InstanceReservationRequest } from './dto/instance-reservation.request.js';
import { InstanceReservationResponse } from './dto/instance-reservation.response.js';
import { InstancePool } from './instance-pool.js';
import { InstanceUpkeep } from './instance-upkeep.js';
import { SlotAvailability } from './slot-availability.js';
import { SlotAvailabilityController } from './slot-availability.controller.js';
import { SlotMover } from './slot-mover.js';
import { SlotsRepository } from './slots.repository.js';
import { VirtualInstancePlugin } from './virtual-instance.plugin.js';

/** `virtual:instance`: instance slots, claimed by the servers booted into them. */
export const virtualInstanceType: ResourceType = {
  plugin: VirtualInstancePlugin,
  providers: [
    ClaimsService,
    InstancePool,
    InstanceUpkeep,
    SlotAvailability,
    SlotMover,
    SlotsRepository,
  ],
  controllers: [ClaimsController, SlotAvailabilityController],
  // The Nova listener shelves a server reserved for later at once.
  exports: [InstanceUpkeep],
  schemas: { request: InstanceReservationRequest, response: InstanceReservationResponse },
};
