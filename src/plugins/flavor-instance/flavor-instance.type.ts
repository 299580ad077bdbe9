import type { ResourceType } from '../resource-type.js';
import { FlavorReservationRequest } from './dto/flavor-reservation.request.js';
import { FlavorReservationResponse } from './dto/flavor-reservation.response.js';
import { FlavorInstancePlugin } from './flavor-instance.plugin.js';

/** `flavor:instance`: servers of an existing Nova flavor, sized into instance slots. */
export const flavorInstanceType: ResourceType = {
  plugin: FlavorInstancePlugin,
  providers: [],
  schemas: { request: FlavorReservationRequest, response: FlavorReservationResponse },
};
