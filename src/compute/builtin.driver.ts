import type { ComputeDriver, HostInventory, Server } from './compute-driver.js';

/**
 * No compute service: Climate's own pools are the truth and are what the scheduler
 * filter reads. Host inventory comes in the host-create request; there are no servers.
 */
export class BuiltinDriver implements ComputeDriver {
  readonly name = 'builtin';

  async hostInventory(): Promise<HostInventory | null> {
    return null;
  }
  async ensurePool(): Promise<void> {}
  async deletePool(): Promise<void> {}
  async addHost(): Promise<void> {}
  async removeHost(): Promise<void> {}
  async hostStates(): Promise<Map<string, boolean> | null> {
    return null;
  }
  async serversOnHost(): Promise<Server[]> {
    return [];
  }
  async deleteServer(): Promise<void> {}
  async snapshotServer(): Promise<void> {}
}
