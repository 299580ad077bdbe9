import { Init1763800000000 } from './migrations/1763800000000-Init.js';
import { Pools1763900000000 } from './migrations/1763900000000-Pools.js';
import { ServerReservations1764100000000 } from './migrations/1764100000000-ServerReservations.js';
import { ReservationResync1764200000000 } from './migrations/1764200000000-ReservationResync.js';
import { InstanceSlots1764000000000 } from './migrations/1764000000000-InstanceSlots.js';
import { SharedPoolIndex1764300000000 } from './migrations/1764300000000-SharedPoolIndex.js';
import { NotificationOutbox1764400000000 } from './migrations/1764400000000-NotificationOutbox.js';
import { LeaseListIndex1764500000000 } from './migrations/1764500000000-LeaseListIndex.js';
import { WebhookDeliveries1764600000000 } from './migrations/1764600000000-WebhookDeliveries.js';
import { SlotEndsIndex1764700000000 } from './migrations/1764700000000-SlotEndsIndex.js';
import { AllocationTimeIndexes1764700000001 } from './migrations/1764700000001-AllocationTimeIndexes.js';
import { PowerPlan1764800000000 } from './migrations/1764800000000-PowerPlan.js';
import { PowerServers1764810000000 } from './migrations/1764810000000-PowerServers.js';
import { LeaseSortIndexes1764900000000 } from './migrations/1764900000000-LeaseSortIndexes.js';
import { TimeOrderedIds1765000000000 } from './migrations/1765000000000-TimeOrderedIds.js';
import { DropLeaseWindowIndex1765000000001 } from './migrations/1765000000001-DropLeaseWindowIndex.js';
import { HostBusy1765100000000 } from './migrations/1765100000000-HostBusy.js';
import { PoolStateAtCommit1765230000000 } from './migrations/1765230000000-PoolStateAtCommit.js';
import { GaugeCounts1765230000001 } from './migrations/1765230000001-GaugeCounts.js';
import { PlacementCost1765230000002 } from './migrations/1765230000002-PlacementCost.js';
import { FloatingIps1765300000000 } from './migrations/1765300000000-FloatingIps.js';
import { LeaseUserEvents1765320000000 } from './migrations/1765320000000-LeaseUserEvents.js';
import { PowerPlanStore1765331000000 } from './migrations/1765331000000-PowerPlanStore.js';
import { PoolStateShards1765340000000 } from './migrations/1765340000000-PoolStateShards.js';
import { HostBusyCounts1765410000000 } from './migrations/1765410000000-HostBusyCounts.js';
import { PoolMemberTriggers1766200000000 } from './migrations/1766200000000-PoolMemberTriggers.js';

export const MIGRATIONS = [
  Init1763800000000,
  Pools1763900000000,
  InstanceSlots1764000000000,
  ServerReservations1764100000000,
  ReservationResync1764200000000,
  SharedPoolIndex1764300000000,
  NotificationOutbox1764400000000,
  LeaseListIndex1764500000000,
  WebhookDeliveries1764600000000,
  SlotEndsIndex1764700000000,
  AllocationTimeIndexes1764700000001,
  PowerPlan1764800000000,
  PowerServers1764810000000,
  LeaseSortIndexes1764900000000,
  TimeOrderedIds1765000000000,
  DropLeaseWindowIndex1765000000001,
  HostBusy1765100000000,
  PoolStateAtCommit1765230000000,
  GaugeCounts1765230000001,
  PlacementCost1765230000002,
  FloatingIps1765300000000,
  LeaseUserEvents1765320000000,
  PowerPlanStore1765331000000,
  PoolStateShards1765340000000,
  HostBusyCounts1765410000000,
  PoolMemberTriggers1766200000000,
];
