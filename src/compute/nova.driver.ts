import { ClimateError } from '../common/errors.js';
import type {
  ComputeDriver,
  FlavorSpec,
  HostInventory,
  PoolSpec,
  Server,
  ServerInfo,
  SlotHolder,
} from './compute-driver.js';
import type { KeystoneClient } from './keystone.client.js';
import { ComputeServiceError, openstackCall } from './openstack-http.js';
import { PlacementClient } from './placement.client.js';

/** Nova's refusals that the caller can act on keep their status; the rest are a 502. */
export class NovaError extends ClimateError {
  constructor(status: number, message: string) {
    const passed = status === 404 || status === 409;
    super(
      passed ? status : 502,
      passed ? (status === 404 ? 'HostNotFound' : 'Conflict') : 'ComputeServiceError',
      message,
    );
  }
}

interface Hypervisor {
  id: string;
  hypervisor_hostname: string;
  state: string;
  status: string;
  service: { host: string };
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

interface NovaServer {
  id: string;
  name: string;
  tenant_id: string;
  status: string;
  'OS-EXT-STS:task_state'?: string | null;
  'OS-EXT-SRV-ATTR:host'?: string | null;
  'OS-EXT-SRV-ATTR:hypervisor_hostname'?: string | null;
  fault?: { message?: string };
  flavor: { vcpus: number; ram: number; disk: number; extra_specs?: Record<string, string> };
}

const POLL_MS = 1000;

function preemptible(server: NovaServer): boolean {
  return /^(true|1|yes)$/i.test(server.flavor.extra_specs?.['blazar:preemptible'] ?? '');
}

/**
 * Nova's compute API v2.1 with a service token. Pools are host aggregates named as
 * Blazar names them; hosts go in by their compute service host. 2.87 is the last
 * microversion whose hypervisor details carry vcpus, memory and disk.
 */
export class NovaDriver implements ComputeDriver {
  readonly name = 'nova';
  private serviceHosts = new Map<string, string>();
  private readonly placement: PlacementClient;

  /**
   * `actionTimeoutMs` bounds the wait for an asynchronous action (unshelve, shelve,
   * delete) to show its result.
   */
  constructor(
    private readonly keystone: KeystoneClient,
    private readonly novaUrl: string | null,
    placementUrl: string | null = null,
    private readonly actionTimeoutMs = 300_000,
  ) {
    this.placement = new PlacementClient(keystone, placementUrl);
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
    const { services } = await this.call<{
      services: { host: string; binary: string; zone: string }[];
    }>('GET', `/os-services?binary=nova-compute&host=${encodeURIComponent(serviceHost)}`);
    return services.find((s) => s.host === serviceHost)?.zone ?? 'nova';
  }

  async hostStates(): Promise<Map<string, boolean>> {
    return new Map(
      (await this.hypervisors()).map((h) => [
        h.hypervisor_hostname,
        h.state === 'up' && h.status === 'enabled',
      ]),
    );
  }

  async ensurePool(pool: PoolSpec): Promise<number> {
    if ((await this.aggregate(pool.name)) === null) {
      const body = {
        aggregate: { name: pool.name, availability_zone: pool.availabilityZone ?? undefined },
      };
      // 409: another replica created it meanwhile. The answer lacks hosts and metadata.
      await this.call('POST', '/os-aggregates', body, [409]);
    }
    const agg = await this.aggregate(pool.name);
    if (agg === null) throw new NovaError(502, `aggregate ${pool.name} could not be created`);
    const missing = Object.entries(pool.metadata).filter(([k, v]) => agg.metadata[k] !== v);
    if (missing.length > 0) {
      await this.call('POST', `/os-aggregates/${agg.id}/action`, {
        set_metadata: { metadata: Object.fromEntries(missing) },
      });
    }
    return agg.id;
  }

  async deletePool(name: string): Promise<void> {
    const agg = await this.aggregate(name);
    if (agg === null) return;
    for (const host of agg.hosts) {
      await this.call(
        'POST',
        `/os-aggregates/${agg.id}/action`,
        { remove_host: { host } },
        [404, 409],
      );
    }
    await this.call('DELETE', `/os-aggregates/${agg.id}`, undefined, [404]);
  }

  async addHost(pool: string, host: string): Promise<void> {
    let agg = await this.aggregate(pool);
    if (agg === null) {
      await this.ensurePool({ name: pool, availabilityZone: null, metadata: {} });
      agg = await this.aggregate(pool);
    }
    const service = await this.serviceHost(host);
    if (agg === null || agg.hosts.includes(service)) return;
    await this.call(
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
    await this.call(
      'POST',
      `/os-aggregates/${agg.id}/action`,
      { remove_host: { host: service } },
      [404, 409],
    );
  }

  async ensureFlavor(f: FlavorSpec): Promise<void> {
    const found = await this.call<{ flavor?: unknown }>(
      'GET',
      `/flavors/${f.id}`,
      undefined,
      [404],
    );
    if (found.flavor === undefined) {
      const flavor = {
        id: f.id,
        name: f.name,
        vcpus: f.vcpus,
        ram: f.ramMb,
        disk: f.diskGb,
        'os-flavor-access:is_public': false,
      };
      await this.call('POST', '/flavors', { flavor }, [409]);
    }
    await this.call('POST', `/flavors/${f.id}/os-extra_specs`, { extra_specs: f.extraSpecs });
  }

  async deleteFlavor(id: string): Promise<void> {
    await this.call('DELETE', `/flavors/${id}`, undefined, [404]);
  }

  async grantFlavorAccess(id: string, projectId: string): Promise<void> {
    await this.call(
      'POST',
      `/flavors/${id}/action`,
      { addTenantAccess: { tenant: projectId } },
      [409],
    );
  }

  async revokeFlavorAccess(id: string, projectId: string): Promise<void> {
    await this.call(
      'POST',
      `/flavors/${id}/action`,
      { removeTenantAccess: { tenant: projectId } },
      [404],
    );
  }

  async ensureServerGroup(
    name: string,
    policy: 'affinity' | 'anti-affinity',
    owner: { projectId: string; trustId: string | null },
  ): Promise<string> {
    const { server_groups: groups } = await this.call<{
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
    const made = await this.call<{ server_group: { id: string } }>(
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
    await this.call('DELETE', `/os-server-groups/${id}`, undefined, [404]);
  }

  async serversWithFlavor(flavorId: string): Promise<Server[]> {
    return this.servers(`flavor=${encodeURIComponent(flavorId)}`);
  }

  async serversOnHost(host: string): Promise<Server[]> {
    return this.servers(`host=${encodeURIComponent(await this.serviceHost(host))}`);
  }

  async getServer(id: string): Promise<ServerInfo | null> {
    const server = await this.server(id);
    if (server === null) return null;
    return {
      id: server.id,
      projectId: server.tenant_id,
      status: server.status,
      host: server['OS-EXT-SRV-ATTR:hypervisor_hostname'] ?? null,
      vcpus: server.flavor.vcpus,
      memoryMb: server.flavor.ram,
      diskGb: server.flavor.disk,
    };
  }

  /**
   * 2.91: an admin may unshelve onto a chosen host. Done once the server is ACTIVE
   * there; an unshelve Nova gave up on (back to SHELVED_OFFLOADED, or ERROR) fails with
   * Nova's own reason.
   */
  async unshelveServer(id: string, host: string): Promise<void> {
    const target = await this.serviceHost(host);
    const before = await this.server(id);
    if (before === null) throw new NovaError(404, `Server ${id} not found`);
    if (before.status.startsWith('SHELVED') && !before['OS-EXT-STS:task_state']) {
      await this.call(
        'POST',
        `/servers/${id}/action`,
        { unshelve: { host: target } },
        [409],
        '2.91',
      );
    }
    const after = await this.settle(id);
    if (after === null) throw new NovaError(404, `Server ${id} vanished while unshelving`);
    if (after.status === 'ACTIVE' && after['OS-EXT-SRV-ATTR:host'] === target) return;
    const where =
      after.status === 'ACTIVE' ? `it runs on ${after['OS-EXT-SRV-ATTR:host']}` : after.status;
    throw new ComputeServiceError(
      `Nova did not unshelve server ${id} onto ${host}: ${where}${await this.fault(id, after)}`,
    );
  }

  async shelveServer(id: string): Promise<void> {
    const server = await this.server(id);
    if (server === null) throw new NovaError(404, `Server ${id} not found`);
    if (server.status === 'SHELVED') {
      await this.call('POST', `/servers/${id}/action`, { shelveOffload: null }, [409]);
    } else if (!server.status.startsWith('SHELVED')) {
      await this.call('POST', `/servers/${id}/action`, { shelve: null }, [409]);
    }
    let after = await this.settle(id);
    if (after?.status === 'SHELVED') {
      // Nova keeps shelved servers on their host for a while unless told otherwise.
      await this.call('POST', `/servers/${id}/action`, { shelveOffload: null }, [409]);
      after = await this.settle(id);
    }
    if (after?.status !== 'SHELVED_OFFLOADED') {
      throw new ComputeServiceError(
        `Nova did not shelve server ${id}: ${after?.status ?? 'gone'}${after ? await this.fault(id, after) : ''}`,
      );
    }
  }

  async deleteServer(id: string): Promise<void> {
    await this.call('DELETE', `/servers/${id}`, undefined, [404]);
    const left = await this.settle(id);
    if (left !== null) {
      throw new ComputeServiceError(
        `Nova did not delete server ${id}: ${left.status}${await this.fault(id, left)}`,
      );
    }
  }

  async sizeReservation(reservationId: string, slots: Map<string, number>): Promise<void> {
    await this.placement.setInventory(reservationId, slots);
  }

  async unsizeReservation(reservationId: string, hosts: string[]): Promise<void> {
    await this.placement.deleteReservation(reservationId, hosts);
  }

  async slotHolders(reservationId: string, hosts: string[]): Promise<SlotHolder[]> {
    return this.placement.consumers(reservationId, hosts);
  }

  private async server(id: string): Promise<NovaServer | null> {
    const { server } = await this.call<{ server?: NovaServer }>(
      'GET',
      `/servers/${encodeURIComponent(id)}`,
      undefined,
      [404],
    );
    return server ?? null;
  }

  /**
   * Polls a server until no task runs on it (Nova has finished or given up on the
   * action), it is gone (null), or the action timeout passes (the last state seen).
   * Nova sets the task before it answers an action, so an idle server is a result.
   */
  private async settle(id: string): Promise<NovaServer | null> {
    const deadline = Date.now() + this.actionTimeoutMs;
    for (;;) {
      const s = await this.server(id);
      if (s === null || (!s['OS-EXT-STS:task_state'] && s.status !== 'BUILD')) return s;
      if (Date.now() >= deadline) return s;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** Nova's reason for the last failed action on a server, when it gives one. */
  private async fault(id: string, server: NovaServer): Promise<string> {
    if (server.fault?.message) return `: ${server.fault.message}`;
    const { instanceActions } = await this.call<{
      instanceActions?: { action: string; request_id: string }[];
    }>('GET', `/servers/${id}/os-instance-actions`, undefined, [404]);
    const last = instanceActions?.[0];
    if (last === undefined) return '';
    const { instanceAction } = await this.call<{
      instanceAction?: { events?: { event: string; result: string; details?: string }[] };
    }>('GET', `/servers/${id}/os-instance-actions/${last.request_id}`, undefined, [404], '2.84');
    const failed = (instanceAction?.events ?? []).filter((e) => e.result === 'Error');
    return failed.length === 0
      ? ` (${last.action})`
      : `: ${last.action} ${failed.map((e) => `${e.event}: ${e.details ?? 'Error'}`).join('; ')}`;
  }

  async snapshotServer(id: string, imageName: string): Promise<void> {
    await this.call(
      'POST',
      `/servers/${id}/action`,
      { createImage: { name: imageName } },
      [404, 409],
    );
  }

  private async servers(filter: string): Promise<Server[]> {
    const { servers } = await this.call<{ servers: NovaServer[] }>(
      'GET',
      `/servers/detail?all_tenants=1&${filter}`,
    );
    return servers.map((s) => ({
      id: s.id,
      name: s.name,
      projectId: s.tenant_id,
      preemptible: preemptible(s),
    }));
  }

  private async hypervisors(): Promise<Hypervisor[]> {
    const { hypervisors } = await this.call<{ hypervisors: Hypervisor[] }>(
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

  private async aggregate(name: string): Promise<Aggregate | null> {
    const { aggregates } = await this.call<{ aggregates: Aggregate[] }>('GET', '/os-aggregates');
    const found = aggregates.find((a) => a.name === name);
    return found === undefined
      ? null
      : { ...found, hosts: found.hosts ?? [], metadata: found.metadata ?? {} };
  }

  /**
   * One Nova call, with the service token unless another is given; statuses in
   * `tolerated` (already there, already gone) are not errors.
   */
  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    tolerated: number[] = [],
    version = '2.79',
    token?: string,
  ): Promise<T> {
    const base = this.novaUrl ?? (await this.keystone.endpoint('compute'));
    const res = await openstackCall({
      method,
      url: `${base}${path}`,
      token: token ?? (await this.keystone.serviceToken()),
      headers: { 'X-OpenStack-Nova-API-Version': version },
      body,
    });
    const text = res.text;
    if (res.status >= 200 && res.status < 300) return res.body as T;
    if (tolerated.includes(res.status)) return {} as T;
    throw new NovaError(
      res.status,
      `Nova ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`,
    );
  }
}
