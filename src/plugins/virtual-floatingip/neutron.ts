import { ClimateError } from '../../common/errors.js';
import type { KeystoneClient } from '../../compute/keystone.client.js';
import { openstackCall } from '../../compute/openstack-http.js';
import type { FloatingIpNetwork, HeldAddress, Subnet } from './floating-ip-network.js';

/** Neutron answered an error, or not what it should: a 502 (the event is retried). */
export class NeutronError extends ClimateError {
  constructor(message: string) {
    super(502, 'NetworkServiceError', message);
  }
}

interface NeutronFloatingIp {
  id: string;
  project_id?: string;
  tenant_id?: string;
  port_id: string | null;
  tags?: string[];
}

interface NeutronSubnet {
  id: string;
  cidr: string;
  gateway_ip: string | null;
  allocation_pools?: { start: string; end: string }[];
}

const TAG = 'blazar';
const reservationTag = (id: string) => `reservation:${id}`;

/** Neutron's API v2.0, with Climate's service token (an admin: it picks addresses). */
export class Neutron implements FloatingIpNetwork {
  readonly checks = true;

  constructor(private readonly keystone: KeystoneClient) {}

  async subnets(networkId: string): Promise<Subnet[] | null> {
    const network = await this.call('GET', `/v2.0/networks/${encodeURIComponent(networkId)}`, {
      tolerated: [404],
    });
    if (network === null) return null;
    const { subnets } = (await this.call(
      'GET',
      `/v2.0/subnets?${query({ network_id: networkId })}`,
    )) as {
      subnets: NeutronSubnet[];
    };
    return subnets.map((s) => ({
      id: s.id,
      cidr: s.cidr,
      gatewayIp: s.gateway_ip,
      allocationPools: s.allocation_pools ?? [],
    }));
  }

  async hold(a: HeldAddress): Promise<void> {
    const tag = reservationTag(a.reservationId);
    let fip = await this.find(a.address, a.networkId);
    if (fip !== null && !(fip.tags ?? []).includes(tag)) {
      // Ours only if an earlier attempt made it in the project and stopped before the tags.
      const project = fip.project_id ?? fip.tenant_id;
      if (project !== a.projectId || (fip.tags ?? []).some((t) => t.startsWith('reservation:'))) {
        throw new NeutronError(
          `Floating IP ${a.address} already exists in Neutron (${fip.id}) and is not reservation ${a.reservationId}'s`,
        );
      }
    }
    if (fip === null) {
      const made = await this.call('POST', '/v2.0/floatingips', {
        body: {
          floatingip: {
            floating_network_id: a.networkId,
            floating_ip_address: a.address,
            project_id: a.projectId,
            ...(a.subnetId === null ? {} : { subnet_id: a.subnetId }),
          },
        },
      });
      fip = (made as { floatingip: NeutronFloatingIp }).floatingip;
    }
    const tags = fip.tags ?? [];
    if (!tags.includes(TAG) || !tags.includes(tag)) {
      const all = [...new Set([...tags, TAG, tag])];
      await this.call('PUT', `/v2.0/floatingips/${fip.id}/tags`, { body: { tags: all } });
    }
    // Done only when Neutron shows it, with its tags.
    const seen = await this.find(a.address, a.networkId, tag);
    if (seen === null || !(seen.tags ?? []).includes(TAG)) {
      throw new NeutronError(`Neutron does not show floating IP ${a.address} tagged ${tag} yet`);
    }
  }

  async release(a: Omit<HeldAddress, 'subnetId' | 'projectId'>): Promise<void> {
    const tag = reservationTag(a.reservationId);
    const fip = await this.find(a.address, a.networkId, tag);
    if (fip === null) return;
    if (fip.port_id !== null) {
      await this.call('PUT', `/v2.0/floatingips/${fip.id}`, {
        body: { floatingip: { port_id: null } },
        tolerated: [404],
      });
    }
    await this.call('DELETE', `/v2.0/floatingips/${fip.id}`, { tolerated: [404] });
    if ((await this.find(a.address, a.networkId, tag)) !== null) {
      throw new NeutronError(`Neutron still shows floating IP ${a.address} after its delete`);
    }
  }

  /** The floating IP of an address on a network (with a tag, if given), or null. */
  private async find(
    address: string,
    networkId: string,
    tag?: string,
  ): Promise<NeutronFloatingIp | null> {
    const filter = { floating_ip_address: address, floating_network_id: networkId };
    const path = `/v2.0/floatingips?${query(tag === undefined ? filter : { ...filter, tags: tag })}`;
    const { floatingips } = (await this.call('GET', path)) as { floatingips: NeutronFloatingIp[] };
    return floatingips[0] ?? null;
  }

  /** One call; null for a tolerated status (already gone), else the body or a NeutronError. */
  private async call(
    method: string,
    path: string,
    options: { body?: unknown; tolerated?: number[] } = {},
  ): Promise<unknown> {
    const base = await this.keystone.endpoint('network');
    const res = await openstackCall({
      method,
      url: `${base}${path}`,
      token: await this.keystone.serviceToken(),
      body: options.body,
    });
    if (res.status >= 200 && res.status < 300) return res.body;
    if (options.tolerated?.includes(res.status)) return null;
    throw new NeutronError(
      `Neutron ${method} ${path} answered ${res.status}: ${res.text.slice(0, 300)}`,
    );
  }
}

function query(values: Record<string, string>): string {
  return new URLSearchParams(values).toString();
}
