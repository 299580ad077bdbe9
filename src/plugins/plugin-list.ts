import type { ResourceType } from './resource-type.js';
import { physicalHostType } from './physical-host/physical-host.type.js';
import { virtualInstanceType } from './virtual-instance/virtual-instance.type.js';
import { virtualFloatingIpType } from './virtual-floatingip/virtual-floatingip.type.js';
import { flavorInstanceType } from './flavor-instance/flavor-instance.type.js';

/**
 * The resource types Climate ships, one line each, in the order the scheduler filter
 * asks them and the OpenAPI document lists their schemas. PLUGINS enables among them.
 */
export const RESOURCE_TYPES: readonly ResourceType[] = [
  physicalHostType,
  virtualInstanceType,
  virtualFloatingIpType,
  flavorInstanceType,
];
