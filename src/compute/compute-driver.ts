/** What a compute service reports about a hypervisor. */
export interface HostInventory {
  hypervisorHostname: string;
  serviceName: string;
  vcpus: number;
  memoryMb: number;
  localGb: number;
  hypervisorType: string;
  hypervisorVersion: number;
  cpuInfo: string;
  availabilityZone: string;
}

export interface PoolSpec {
  /** Aggregate name: `freepool`, the reservation id, `rack:r12`, … */
  name: string;
  availabilityZone: string | null;
  metadata: Record<string, string>;
}

/** A pool as the compute service holds it (Nova: a host aggregate), by Climate's name. */
export interface ComputePool extends PoolSpec {
  /** The compute service's id of it. */
  id: number;
  /** Its hosts, by hypervisor name. */
  hosts: string[];
}

/**
 * What the compute service holds of the kinds of objects Climate (and Blazar before it)
 * makes there: read when a site's existing state is adopted and checked against
 * Climate's record.
 */
export interface ComputeSurvey {
  pools: ComputePool[];
  /** Ids of every flavor, private ones included. */
  flavors: string[];
  /** Ids of every server group, of every project. */
  serverGroups: string[];
  /** Reservation ids that have a resource class of their own (CUSTOM_RESERVATION_*). */
  reservationClasses: string[];
}

export interface Server {
  id: string;
  name: string;
  projectId: string;
  /** Its flavor says `blazar:preemptible`: it may be removed when its host is reserved. */
  preemptible?: boolean;
}

/**
 * A host's power as the compute service sees it: `booting` and `stopping` are on the way
 * to `on` and `off`.
 */
export type PowerState = 'on' | 'off' | 'booting' | 'stopping';

/**
 * How a compute service disabled by Climate's power plan says so (Nova's
 * `disabled_reason`): a disabled service whose reason starts with it is powered off on
 * purpose, not failed.
 */
export const CLIMATE_DISABLE_PREFIX = 'climate:';

/** A server that holds one of an instance reservation's slots. */
export interface SlotHolder {
  serverId: string;
  host: string;
}

/**
 * The compute service behind Climate's pools. Climate's database is always the record of
 * which host is in which pool; a driver mirrors those pools into the compute service
 * (Nova host aggregates) and acts on servers. Every method must be idempotent: creating
 * a pool that exists, adding a host that is there, or deleting what is gone succeeds.
 */
export interface ComputeDriver {
  readonly name: string;

  /**
   * Inventory of a hypervisor by name or id, or null when the driver has no inventory of
   * its own and the request must carry it (the builtin driver).
   */
  hostInventory(nameOrId: string): Promise<HostInventory | null>;

  /** Returns the compute service's id of the pool, or null when it has none. */
  ensurePool(pool: PoolSpec): Promise<number | null>;
  deletePool(name: string): Promise<void>;
  addHost(pool: string, host: string): Promise<void>;
  removeHost(pool: string, host: string): Promise<void>;

  /**
   * Which hypervisors are up, by name, or null when the driver cannot tell (builtin).
   * A host reported down is taken out of service and its reservations healed.
   */
  hostStates(): Promise<Map<string, boolean> | null>;

  /** The private flavor of an instance reservation (id = reservation id). */
  ensureFlavor(flavor: FlavorSpec): Promise<void>;
  /**
   * A flavor with its extra specs as the project sees it: null when there is no such
   * flavor or it is private to other projects (flavor:instance reservations).
   */
  getFlavor(id: string, projectId: string): Promise<SourceFlavor | null>;
  /**
   * Hosts (hypervisor names) whose compute node has every `required` trait and none of
   * the `forbidden` ones (Nova: Placement's root providers).
   */
  hostsWithTraits(required: string[], forbidden: string[]): Promise<string[]>;
  deleteFlavor(id: string): Promise<void>;
  grantFlavorAccess(id: string, projectId: string): Promise<void>;
  revokeFlavorAccess(id: string, projectId: string): Promise<void>;
  /**
   * Returns the group's id; the same name again returns the same group. With a trust
   * the group is made as the tenant, in its project, so that its servers may join it.
   */
  ensureServerGroup(
    name: string,
    policy: 'affinity' | 'anti-affinity',
    owner: { projectId: string; trustId: string | null },
  ): Promise<string>;
  deleteServerGroup(id: string): Promise<void>;
  /** Servers built with a flavor (all projects). */
  serversWithFlavor(flavorId: string): Promise<Server[]>;

  /**
   * The exact size of an instance reservation in the compute service (Nova: Placement
   * inventory of its own resource class): per host, the number of its slots there; a
   * host given 0 keeps none. Its flavor then admits no server past the slots.
   */
  sizeReservation(reservationId: string, slots: Map<string, number>): Promise<void>;
  /** Removes the reservation's size from these hosts and forgets its resource class. */
  unsizeReservation(reservationId: string, hosts: string[]): Promise<void>;
  /**
   * The reservation's size per host as the compute service holds it (hosts without any
   * are left out), or null when the driver keeps none (builtin).
   */
  reservationSize(reservationId: string, hosts: string[]): Promise<Map<string, number> | null>;
  /** Servers holding the reservation's slots, or null when the driver cannot tell. */
  slotHolders(reservationId: string, hosts: string[]): Promise<SlotHolder[] | null>;

  /** One server with its flavor's size, or null when there is no such server. */
  getServer(id: string): Promise<ServerInfo | null>;
  /**
   * Wakes a shelved server on the given host. Resolves only once the server runs there;
   * throws with the compute service's fault when it does not.
   */
  unshelveServer(id: string, host: string): Promise<void>;
  /** Shelves and offloads a server; resolves once it is offloaded (the RESERVED state). */
  shelveServer(id: string): Promise<void>;

  /** The compute service's pools, flavors, groups and classes; null when it has none. */
  survey(): Promise<ComputeSurvey | null>;

  /** Servers running on a host (all projects). */
  serversOnHost(host: string): Promise<Server[]>;
  /** Resolves once the server is gone (deleting what is gone succeeds). */
  deleteServer(id: string): Promise<void>;
  snapshotServer(id: string, imageName: string): Promise<void>;

  /**
   * Starts powering a host on (it may take its boot time: `powerState` says when it is
   * `on`). Idempotent: a host that is on or booting stays so.
   */
  powerOn(host: string): Promise<void>;
  /**
   * Takes a host out of service to save power (Nova: its compute service disabled with
   * a reason starting with CLIMATE_DISABLE_PREFIX). Idempotent. Climate calls it only for
   * a host without servers or allocations in progress.
   */
  powerOff(host: string): Promise<void>;
  /** The host's power now; a host the driver never powered off is `on`. */
  powerState(host: string): Promise<PowerState>;
}

export interface ServerInfo {
  id: string;
  projectId: string;
  status: string;
  /** The hypervisor it runs on, when it runs. */
  host?: string | null;
  vcpus: number;
  memoryMb: number;
  diskGb: number;
}

export interface FlavorSpec {
  id: string;
  name: string;
  vcpus: number;
  ramMb: number;
  diskGb: number;
  /** Ephemeral disk (GB) and swap (MB), 0 when not given. */
  ephemeralGb?: number;
  swapMb?: number;
  extraSpecs: Record<string, string>;
}

/** An existing flavor, as a flavor:instance reservation reads it. */
export interface SourceFlavor {
  id: string;
  name: string;
  vcpus: number;
  ramMb: number;
  diskGb: number;
  ephemeralGb: number;
  swapMb: number;
  extraSpecs: Record<string, string>;
  /** The flavor as the compute service shows it, extra specs included, links left out. */
  shown: Record<string, unknown>;
}

export const COMPUTE_DRIVER = Symbol('COMPUTE_DRIVER');
