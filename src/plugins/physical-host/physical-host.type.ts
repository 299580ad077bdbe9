import type { ResourceType } from '../resource-type.js';
import { HostReservationRequest } from './dto/host-reservation.request.js';
import { HostReservationResponse } from './dto/host-reservation.response.js';
import { AllocationsRepository } from './host-allocations.repository.js';
import { HostMover } from './host-mover.js';
import { PhysicalHostPlugin } from './physical-host.plugin.js';
import { PoolSync } from './pool-sync.js';

/** `physical:host`: whole hosts moved into a reservation pool. */
export const physicalHostType: ResourceType = {
  plugin: PhysicalHostPlugin,
  providers: [AllocationsRepository, PoolSync, HostMover],
  // The manager's maintenance and the power plan sync pools through it.
  exports: [PoolSync],
  schemas: { request: HostReservationRequest, response: HostReservationResponse },
};
