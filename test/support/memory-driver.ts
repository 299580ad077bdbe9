import type {
  ComputeDriver,
  ComputeSurvey,
  FlavorSpec,
  HostInventory,
  PoolSpec,
  PowerState,
  Server,
  ServerInfo,
  SlotHolder,
  SourceFlavor,
} from '../../src/compute/compute-driver.js';

/**
 * A compute service in memory, for tests of what Climate asks of a driver: pools with
 * their hosts and metadata, servers per host, snapshots, and host states to report.
 * The real Nova driver is tested against Nova itself.
 */
export class MemoryDriver implements ComputeDriver {
  readonly name = 'memory';
  readonly pools = new Map<string, { spec: PoolSpec | null; hosts: Set<string> }>();
  readonly servers = new Map<string, Server[]>();
  readonly snapshots: string[] = [];
  states: Map<string, boolean> | null = null;

  async hostInventory(): Promise<HostInventory | null> {
    return null;
  }
  async ensurePool(spec: PoolSpec): Promise<number | null> {
    const pool = this.pools.get(spec.name);
    if (pool) pool.spec = spec;
    else this.pools.set(spec.name, { spec, hosts: new Set() });
    return null;
  }
  async deletePool(name: string): Promise<void> {
    this.pools.delete(name);
  }
  /** Driver calls to fail once, by method name: a compute service failing half-way. */
  readonly failNext = new Set<string>();

  async addHost(pool: string, host: string): Promise<void> {
    if (this.failNext.delete('addHost')) throw new Error('injected failure in addHost');
    if (!this.pools.has(pool)) this.pools.set(pool, { spec: null, hosts: new Set() });
    this.pools.get(pool)?.hosts.add(host);
  }
  async removeHost(pool: string, host: string): Promise<void> {
    this.pools.get(pool)?.hosts.delete(host);
  }
  readonly flavors = new Map<string, FlavorSpec & { access: Set<string> }>();
  readonly groups = new Map<
    string,
    { name: string; policy: string; projectId?: string; trustId?: string | null }
  >();

  async ensureFlavor(flavor: FlavorSpec): Promise<void> {
    if (!this.flavors.has(flavor.id)) this.flavors.set(flavor.id, { ...flavor, access: new Set() });
  }
  /** Flavors tenants may reserve by (flavor:instance), with who sees the private ones. */
  readonly sourceFlavors = new Map<string, SourceFlavor & { projects: string[] | null }>();
  /** Placement traits of each host's compute node. */
  readonly traits = new Map<string, string[]>();

  async getFlavor(id: string, projectId: string): Promise<SourceFlavor | null> {
    const found = this.sourceFlavors.get(id);
    if (found === undefined || (found.projects !== null && !found.projects.includes(projectId)))
      return null;
    const flavor: SourceFlavor & { projects?: unknown } = { ...found };
    delete flavor.projects;
    return flavor;
  }
  async hostsWithTraits(required: string[], forbidden: string[]): Promise<string[]> {
    return [...this.traits]
      .filter(
        ([, t]) => required.every((r) => t.includes(r)) && !forbidden.some((f) => t.includes(f)),
      )
      .map(([host]) => host);
  }
  async deleteFlavor(id: string): Promise<void> {
    this.flavors.delete(id);
  }
  async grantFlavorAccess(id: string, projectId: string): Promise<void> {
    this.flavors.get(id)?.access.add(projectId);
  }
  async revokeFlavorAccess(id: string, projectId: string): Promise<void> {
    this.flavors.get(id)?.access.delete(projectId);
  }
  async ensureServerGroup(
    name: string,
    policy: 'affinity' | 'anti-affinity',
    owner: { projectId: string; trustId: string | null },
  ): Promise<string> {
    const found = [...this.groups].find(([, g]) => g.name === name && g.policy === policy);
    if (found) return found[0];
    const id = `group-${this.groups.size + 1}`;
    this.groups.set(id, { name, policy, ...owner });
    return id;
  }
  async deleteServerGroup(id: string): Promise<void> {
    this.groups.delete(id);
  }
  /** Servers by flavor: the `name` of test servers is their flavor id here. */
  async serversWithFlavor(flavorId: string): Promise<Server[]> {
    return [...this.servers.values()].flat().filter((s) => s.name === flavorId);
  }
  /** Shelved servers that leases may reserve, by id; `host` is set when unshelved. */
  readonly shelved = new Map<string, ServerInfo & { host: string | null }>();

  async getServer(id: string): Promise<ServerInfo | null> {
    return this.shelved.get(id) ?? null;
  }
  async unshelveServer(id: string, host: string): Promise<void> {
    const server = this.shelved.get(id);
    if (server === undefined || server.status === 'ACTIVE') return;
    Object.assign(server, { status: 'ACTIVE', host });
    this.servers.set(host, [
      ...(this.servers.get(host) ?? []),
      { id, name: 'unshelved', projectId: server.projectId },
    ]);
  }
  async shelveServer(id: string): Promise<void> {
    const server = this.shelved.get(id);
    if (server === undefined) throw new Error(`no server ${id}`);
    Object.assign(server, { status: 'SHELVED_OFFLOADED', host: null });
  }
  /** Per reservation, its size per host (Placement inventory in Nova). */
  readonly sizes = new Map<string, Map<string, number>>();
  /** Servers holding slots, per reservation, as the compute service reports them. */
  readonly holders = new Map<string, SlotHolder[]>();

  async sizeReservation(reservationId: string, slots: Map<string, number>): Promise<void> {
    const size = this.sizes.get(reservationId) ?? new Map<string, number>();
    for (const [host, n] of slots) {
      if (n > 0) size.set(host, n);
      else size.delete(host);
    }
    this.sizes.set(reservationId, size);
  }
  async unsizeReservation(reservationId: string): Promise<void> {
    this.sizes.delete(reservationId);
  }
  async reservationSize(reservationId: string, hosts: string[]): Promise<Map<string, number>> {
    return new Map([...(this.sizes.get(reservationId) ?? [])].filter(([h]) => hosts.includes(h)));
  }
  async survey(): Promise<ComputeSurvey> {
    return {
      pools: [...this.pools].map(([name, p], i) => ({
        id: i + 1,
        name,
        availabilityZone: p.spec?.availabilityZone ?? null,
        metadata: p.spec?.metadata ?? {},
        hosts: [...p.hosts],
      })),
      flavors: [...this.flavors.keys()],
      serverGroups: [...this.groups.keys()],
      reservationClasses: [...this.sizes.keys()],
    };
  }
  async slotHolders(reservationId: string): Promise<SlotHolder[] | null> {
    return this.holders.get(reservationId) ?? [];
  }
  async hostStates(): Promise<Map<string, boolean> | null> {
    return this.states;
  }
  async serversOnHost(host: string): Promise<Server[]> {
    return this.servers.get(host) ?? [];
  }
  async deleteServer(id: string): Promise<void> {
    this.shelved.delete(id);
    for (const [host, list] of this.servers)
      this.servers.set(
        host,
        list.filter((s) => s.id !== id),
      );
  }
  async snapshotServer(id: string, imageName: string): Promise<void> {
    this.snapshots.push(`${id}:${imageName}`);
  }

  /** Hosts powered off (all others are on); powering on is immediate here. */
  readonly poweredOff = new Set<string>();

  async powerOn(host: string): Promise<void> {
    if (this.failNext.delete('powerOn')) throw new Error('injected failure in powerOn');
    this.poweredOff.delete(host);
  }
  async powerOff(host: string): Promise<void> {
    if (this.failNext.delete('powerOff')) throw new Error('injected failure in powerOff');
    this.poweredOff.add(host);
  }
  async powerState(host: string): Promise<PowerState> {
    return this.poweredOff.has(host) ? 'off' : 'on';
  }

  /** Which pool holds a host, per the driver (Nova's view). */
  poolOf(host: string): string[] {
    return [...this.pools].filter(([, p]) => p.hosts.has(host)).map(([name]) => name);
  }
}
