import { ClimateError } from '../common/errors.js';
import type {
  ComputeDriver,
  FlavorSpec,
  HostInventory,
  PoolSpec,
  Server,
  ServerInfo,
} from './compute-driver.js';
import type { KeystoneClient } from './keystone.client.js';

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
}

/**
 * Nova's compute API v2.1 with a service token. Pools are host aggregates named as
 * Blazar names them; hosts go in by their compute service host. 2.87 is the last
 * microversion whose hypervisor details carry vcpus, memory and disk.
 */
export class NovaDriver implements ComputeDriver {
  readonly name = 'nova';
  private serviceHosts = new Map<string, string>();

  constructor(
    private readonly keystone: KeystoneClient,
    private readonly novaUrl: string | null,
  ) {}

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
      availabilityZone: 'nova',
    };
  }

  async hostStates(): Promise<Map<string, boolean>> {
    return new Map(
      (await this.hypervisors()).map((h) => [
        h.hypervisor_hostname,
        h.state === 'up' && h.status === 'enabled',
      ]),
    );
  }

  async ensurePool(pool: PoolSpec): Promise<void> {
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
    const { server } = await this.call<{
      server?: {
        id: string;
        tenant_id: string;
        status: string;
        flavor: { vcpus: number; ram: number; disk: number };
      };
    }>('GET', `/servers/${encodeURIComponent(id)}`, undefined, [404]);
    if (server === undefined) return null;
    return {
      id: server.id,
      projectId: server.tenant_id,
      status: server.status,
      vcpus: server.flavor.vcpus,
      memoryMb: server.flavor.ram,
      diskGb: server.flavor.disk,
    };
  }

  /** 2.91: an admin may unshelve onto a chosen host. */
  async unshelveServer(id: string, host: string): Promise<void> {
    const server = await this.getServer(id);
    if (server === null || !server.status.startsWith('SHELVED')) return;
    await this.call(
      'POST',
      `/servers/${id}/action`,
      { unshelve: { host: await this.serviceHost(host) } },
      [],
      '2.91',
    );
  }

  async deleteServer(id: string): Promise<void> {
    await this.call('DELETE', `/servers/${id}`, undefined, [404]);
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
    return servers.map((s) => ({ id: s.id, name: s.name, projectId: s.tenant_id }));
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
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        'X-Auth-Token': token ?? (await this.keystone.serviceToken()),
        'X-OpenStack-Nova-API-Version': version,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.ok) return (text === '' ? {} : JSON.parse(text)) as T;
    if (tolerated.includes(res.status)) return {} as T;
    throw new NovaError(
      res.status,
      `Nova ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`,
    );
  }
}
