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
} from './compute-driver.js';
import type { KeystoneClient } from './keystone.client.js';
import { NovaApi, NovaError } from './nova-api.js';
import { NovaFlavors } from './nova-flavors.js';
import { NovaServers } from './nova-servers.js';
import { disabledByClimate, NovaPower } from './nova-power.js';
import { PlacementClient } from './placement.client.js';

export { NovaError } from './nova-api.js';

interface Hypervisor {
  id: string;
  hypervisor_hostname: string;
  state: string;
  status: string;
  service: { host: string; disabled_reason?: string | null };
  vcpus?: number;
  memory_mb?: number;
  local_gb?: number;
  hypervisor_type?: string;
  hypervisor_version?: number;
  cpu_info?: unknown;
}

interface Aggregate {
  id: number;
  name: string;
  hosts: string[];
  metadata: Record<string, string>;
}

/** Climate's name of the freepool; Nova's may differ (`freepoolName`). */
const FREEPOOL = 'freepool';

/**
 * Nova's compute API v2.1 with a service token. Pools are host aggregates named as
 * Blazar names them (the freepool as configured, Blazar's `aggregate_freepool_name`);
 * hosts go in by their compute service host. 2.87 is the last microversion whose
 * hypervisor details carry vcpus, memory and disk.
 */
export class NovaDriver implements ComputeDriver {
  readonly name = 'nova';
  private serviceHosts = new Map<string, string>();
  private readonly placement: PlacementClient;
  private readonly api: NovaApi;
  private readonly nova: NovaServers;
  private readonly power: NovaPower;
  private readonly flavors: NovaFlavors;

  /**
   * `actionTimeoutMs` bounds the wait for an asynchronous action (unshelve, shelve,
   * delete) to show its result.
   */
  constructor(
    private readonly keystone: KeystoneClient,
    novaUrl: string | null,
    placementUrl: string | null = null,
    actionTimeoutMs = 300_000,
    /** Nova's name of Climate's `freepool` (FREEPOOL_NAME, Blazar's aggregate_freepool_name). */
    private readonly freepoolName = FREEPOOL,
  ) {
    this.placement = new PlacementClient(keystone, placementUrl);
    this.api = new NovaApi(keystone, novaUrl);
    this.nova = new NovaServers(this.api, (host) => this.serviceHost(host), actionTimeoutMs);
    this.power = new NovaPower(this.api, (host) => this.serviceHost(host));
    this.flavors = new NovaFlavors(this.api);
  }

  powerOn(host: string): Promise<void> {
    return this.power.powerOn(host);
  }

  powerOff(host: string): Promise<void> {
    return this.power.powerOff(host);
  }

  powerState(host: string): Promise<PowerState> {
    return this.power.state(host);
  }

  getServer(id: string): Promise<ServerInfo | null> {
    return this.nova.get(id);
  }

  unshelveServer(id: string, host: string): Promise<void> {
    return this.nova.unshelve(id, host);
  }

  shelveServer(id: string): Promise<void> {
    return this.nova.shelve(id);
  }

  deleteServer(id: string): Promise<void> {
    return this.nova.delete(id);
  }

  async hostInventory(nameOrId: string): Promise<HostInventory | null> {
    const hypervisors = await this.hypervisors();
    const found = hypervisors.filter(
      (h) => h.id === nameOrId || h.hypervisor_hostname === nameOrId,
    );
    if (found.length === 0) throw new NovaError(404, `Host '${nameOrId}' not found!`);
    if (found.length > 1) throw new NovaError(409, `More than one hypervisor is named ${nameOrId}`);
    const h = found[0];
    return {
      hypervisorHostname: h.hypervisor_hostname,
      serviceName: h.service.host,
      vcpus: h.vcpus ?? 0,
      memoryMb: h.memory_mb ?? 0,
      localGb: h.local_gb ?? 0,
      hypervisorType: h.hypervisor_type ?? '',
      hypervisorVersion: h.hypervisor_version ?? 0,
      cpuInfo: typeof h.cpu_info === 'string' ? h.cpu_info : JSON.stringify(h.cpu_info ?? ''),
      availabilityZone: await this.zoneOf(h.service.host),
    };
  }

  /** The zone Nova reports for a compute host (its aggregate's, or the default). */
  private async zoneOf(serviceHost: string): Promise<string> {
    const { services } = await this.api.call<{
      services: { host: string; binary: string; zone: string }[];
    }>('GET', `/os-services?binary=nova-compute&host=${encodeURIComponent(serviceHost)}`);
    return services.find((s) => s.host === serviceHost)?.zone ?? 'nova';
  }

  /** A service Climate's power plan disabled is not a failure: the host counts as up. */
  async hostStates(): Promise<Map<string, boolean>> {
    return new Map(
      (await this.hypervisors()).map((h) => [
        h.hypervisor_hostname,
        h.state === 'up' &&
          (h.status === 'enabled' || disabledByClimate(h.service.disabled_reason)),
      ]),
    );
  }

  async ensurePool(pool: PoolSpec): Promise<number> {
    if ((await this.aggregate(pool.name)) === null) {
      const body = {
        aggregate: {
          name: this.novaName(pool.name),
          availability_zone: pool.availabilityZone ?? undefined,
        },
      };
      // 409: another replica created it meanwhile. The answer lacks hosts and metadata.
      await this.api.call('POST', '/os-aggregates', body, [409]);
    }
    const agg = await this.aggregate(pool.name);
    if (agg === null) {
      throw new NovaError(502, `aggregate ${this.novaName(pool.name)} could not be created`);
    }
    const missing = Object.entries(pool.metadata).filter(([k, v]) => agg.metadata[k] !== v);
    if (missing.length > 0) {
      await this.api.call('POST', `/os-aggregates/${agg.id}/action`, {
        set_metadata: { metadata: Object.fromEntries(missing) },
      });
    }
    return agg.id;
  }

  async deletePool(name: string): Promise<void> {
    const agg = await this.aggregate(name);
    if (agg === null) return;
    for (const host of agg.hosts) {
      await this.api.call(
        'POST',
        `/os-aggregates/${agg.id}/action`,
        { remove_host: { host } },
        [404, 409],
      );
    }
    await this.api.call('DELETE', `/os-aggregates/${agg.id}`, undefined, [404]);
  }

  async addHost(pool: string, host: string): Promise<void> {
    let agg = await this.aggregate(pool);
    if (agg === null) {
      await this.ensurePool({ name: pool, availabilityZone: null, metadata: {} });
      agg = await this.aggregate(pool);
    }
    const service = await this.serviceHost(host);
    if (agg === null || agg.hosts.includes(service)) return;
    await this.api.call(
      'POST',
      `/os-aggregates/${agg.id}/action`,
      { add_host: { host: service } },
      [409],
    );
  }

  async removeHost(pool: string, host: string): Promise<void> {
    const agg = await this.aggregate(pool);
    const service = await this.serviceHost(host);
    if (agg === null || !agg.hosts.includes(service)) return;
    await this.api.call(
      'POST',
      `/os-aggregates/${agg.id}/action`,
      { remove_host: { host: service } },
      [404, 409],
    );
  }

  hostsWithTraits(required: string[], forbidden: string[]): Promise<string[]> {
    return this.placement.rootsWithTraits(required, forbidden);
  }

  ensureFlavor(f: FlavorSpec): Promise<void> {
    return this.flavors.ensure(f);
  }

  getFlavor(id: string, projectId: string): Promise<SourceFlavor | null> {
    return this.flavors.get(id, projectId);
  }

  deleteFlavor(id: string): Promise<void> {
    return this.flavors.delete(id);
  }

  grantFlavorAccess(id: string, projectId: string): Promise<void> {
    return this.flavors.grantAccess(id, projectId);
  }

  revokeFlavorAccess(id: string, projectId: string): Promise<void> {
    return this.flavors.revokeAccess(id, projectId);
  }

  async ensureServerGroup(
    name: string,
    policy: 'affinity' | 'anti-affinity',
    owner: { projectId: string; trustId: string | null },
  ): Promise<string> {
    const { server_groups: groups } = await this.api.call<{
      server_groups: { id: string; name: string; policy: string; project_id: string }[];
    }>('GET', '/os-server-groups?all_projects=True');
    // A group left by a start that failed before the reservation's affinity changed
    // has the old policy: that one is not ours any more.
    const found = groups.find(
      (g) =>
        g.name === name &&
        g.policy === policy &&
        (owner.trustId === null || g.project_id === owner.projectId),
    );
    if (found) return found.id;
    const token =
      owner.trustId === null ? undefined : await this.keystone.trustToken(owner.trustId);
    const made = await this.api.call<{ server_group: { id: string } }>(
      'POST',
      '/os-server-groups',
      { server_group: { name, policy } },
      [],
      undefined,
      token,
    );
    return made.server_group.id;
  }

  async deleteServerGroup(id: string): Promise<void> {
    await this.api.call('DELETE', `/os-server-groups/${id}`, undefined, [404]);
  }

  async serversWithFlavor(flavorId: string): Promise<Server[]> {
    return this.nova.list(`flavor=${encodeURIComponent(flavorId)}`);
  }

  async serversOnHost(host: string): Promise<Server[]> {
    return this.nova.list(`host=${encodeURIComponent(await this.serviceHost(host))}`);
  }

  async sizeReservation(reservationId: string, slots: Map<string, number>): Promise<void> {
    await this.placement.setInventory(reservationId, slots);
  }

  async unsizeReservation(reservationId: string, hosts: string[]): Promise<void> {
    await this.placement.deleteReservation(reservationId, hosts);
  }

  reservationSize(reservationId: string, hosts: string[]): Promise<Map<string, number>> {
    return this.placement.sizes(reservationId, hosts);
  }

  /** Aggregates by Climate's names, their hosts by hypervisor name. */
  async survey(): Promise<ComputeSurvey> {
    const hypervisors = new Map(
      (await this.hypervisors()).map((h) => [h.service.host, h.hypervisor_hostname]),
    );
    const { aggregates } = await this.api.call<{
      aggregates: (Aggregate & { availability_zone: string | null })[];
    }>('GET', '/os-aggregates');
    const { flavors } = await this.api.call<{ flavors: { id: string }[] }>(
      'GET',
      '/flavors?is_public=None',
    );
    const { server_groups: groups } = await this.api.call<{ server_groups: { id: string }[] }>(
      'GET',
      '/os-server-groups?all_projects=True&limit=100000',
    );
    return {
      pools: aggregates.map((a) => ({
        id: a.id,
        name: a.name === this.freepoolName ? FREEPOOL : a.name,
        availabilityZone: a.availability_zone ?? null,
        metadata: a.metadata ?? {},
        hosts: (a.hosts ?? []).map((h) => hypervisors.get(h) ?? h),
      })),
      flavors: flavors.map((f) => f.id),
      serverGroups: groups.map((g) => g.id),
      reservationClasses: await this.placement.reservationClasses(),
    };
  }

  async slotHolders(reservationId: string, hosts: string[]): Promise<SlotHolder[]> {
    return this.placement.consumers(reservationId, hosts);
  }

  async snapshotServer(id: string, imageName: string): Promise<void> {
    await this.api.call(
      'POST',
      `/servers/${id}/action`,
      { createImage: { name: imageName } },
      [404, 409],
    );
  }

  private async hypervisors(): Promise<Hypervisor[]> {
    const { hypervisors } = await this.api.call<{ hypervisors: Hypervisor[] }>(
      'GET',
      '/os-hypervisors/detail',
      undefined,
      [],
      '2.87',
    );
    this.serviceHosts = new Map(hypervisors.map((h) => [h.hypervisor_hostname, h.service.host]));
    return hypervisors;
  }

  private async serviceHost(hypervisorHostname: string): Promise<string> {
    if (!this.serviceHosts.has(hypervisorHostname)) await this.hypervisors();
    return this.serviceHosts.get(hypervisorHostname) ?? hypervisorHostname;
  }

  /** Nova's name of a pool: the freepool's is configured, every other is Climate's. */
  private novaName(pool: string): string {
    return pool === FREEPOOL ? this.freepoolName : pool;
  }

  private async aggregate(name: string): Promise<Aggregate | null> {
    const { aggregates } = await this.api.call<{ aggregates: Aggregate[] }>(
      'GET',
      '/os-aggregates',
    );
    const found = aggregates.find((a) => a.name === this.novaName(name));
    return found === undefined
      ? null
      : { ...found, hosts: found.hosts ?? [], metadata: found.metadata ?? {} };
  }
}
