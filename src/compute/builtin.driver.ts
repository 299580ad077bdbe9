import type {
  ComputeDriver,
  HostInventory,
  Server,
  ServerInfo,
  SlotHolder,
} from './compute-driver.js';

/**
 * No compute service: Climate's own pools are the truth and are what the scheduler
 * filter reads. Host inventory comes in the host-create request; there are no servers.
 */
export class BuiltinDriver implements ComputeDriver {
  readonly name = 'builtin';

  async hostInventory(): Promise<HostInventory | null> {
    return null;
  }
  async ensurePool(): Promise<number | null> {
    return null;
  }
  async deletePool(): Promise<void> {}
  async addHost(): Promise<void> {}
  async removeHost(): Promise<void> {}
  async ensureFlavor(): Promise<void> {}
  async deleteFlavor(): Promise<void> {}
  async grantFlavorAccess(): Promise<void> {}
  async revokeFlavorAccess(): Promise<void> {}
  /** No compute service: the group's name stands for it. */
  async ensureServerGroup(name: string): Promise<string> {
    return name;
  }
  async deleteServerGroup(): Promise<void> {}
  async serversWithFlavor(): Promise<Server[]> {
    return [];
  }
  /** No compute service, so no servers to reserve. */
  async getServer(): Promise<ServerInfo | null> {
    return null;
  }
  async unshelveServer(): Promise<void> {}
  async shelveServer(): Promise<void> {}
  /** Climate's claims are the only record of who holds a slot. */
  async sizeReservation(): Promise<void> {}
  async unsizeReservation(): Promise<void> {}
  async slotHolders(): Promise<SlotHolder[] | null> {
    return null;
  }
  async hostStates(): Promise<Map<string, boolean> | null> {
    return null;
  }
  async serversOnHost(): Promise<Server[]> {
    return [];
  }
  async deleteServer(): Promise<void> {}
  async snapshotServer(): Promise<void> {}
}
