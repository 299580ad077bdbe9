import { Clock, SystemClock } from '../common/clock.js';
import { InvalidInput } from '../common/errors.js';
import type {
  ComputeDriver,
  ComputeSurvey,
  HostInventory,
  PowerState,
  Server,
  ServerInfo,
  SlotHolder,
  SourceFlavor,
} from './compute-driver.js';

/**
 * No compute service: Climate's own pools are the truth and are what the scheduler
 * filter reads. Host inventory comes in the host-create request; there are no servers.
 * Power is simulated: a host powered on is `booting` for `bootMs` of the clock, then
 * `on` (the state lives in this process; the power plan's table is the record).
 */
export class BuiltinDriver implements ComputeDriver {
  readonly name = 'builtin';
  /** Hosts not on: off, or booting since a time. */
  private readonly power = new Map<string, { state: 'off' } | { state: 'booting'; at: number }>();

  constructor(
    private readonly clock: Clock = new SystemClock(),
    private readonly bootMs = 0,
  ) {}

  async powerOn(host: string): Promise<void> {
    if (this.power.get(host)?.state !== 'off') return;
    if (this.bootMs === 0) this.power.delete(host);
    else this.power.set(host, { state: 'booting', at: this.clock.now().getTime() });
  }

  async powerOff(host: string): Promise<void> {
    this.power.set(host, { state: 'off' });
  }

  async powerState(host: string): Promise<PowerState> {
    const power = this.power.get(host);
    if (power === undefined) return 'on';
    if (power.state === 'off') return 'off';
    if (this.clock.now().getTime() - power.at < this.bootMs) return 'booting';
    this.power.delete(host);
    return 'on';
  }

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
  /**
   * No compute service, so no flavors to reserve by: a flavor:instance reservation is
   * refused with what the operator must change.
   */
  async getFlavor(id: string): Promise<SourceFlavor | null> {
    throw new InvalidInput(
      `Flavor ${id} cannot be read: the builtin compute driver has no flavors; ` +
        'flavor:instance reservations need COMPUTE_DRIVER=nova (virtual:instance takes sizes)',
      'FlavorNotFound',
    );
  }
  async hostsWithTraits(): Promise<string[]> {
    return [];
  }
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
  async reservationSize(): Promise<Map<string, number> | null> {
    return null;
  }
  /** Climate's own pools are all there is. */
  async survey(): Promise<ComputeSurvey | null> {
    return null;
  }
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
