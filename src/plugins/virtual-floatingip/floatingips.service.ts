import { BlockList, isIPv6 } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../../common/clock.js';
import { formatTimestamp } from '../../common/dates.js';
import { ClimateError, Conflict, InvalidInput, NotFound } from '../../common/errors.js';
import { isUuid } from '../../common/ids.js';
import { withTransaction } from '../../database/transaction.js';
import { PluginRegistry } from '../plugin-registry.js';
import type { FloatingIpResponse } from './dto/floatingip.response.js';
import { FLOATING_IP_NETWORK, type FloatingIpNetwork, type Subnet } from './floating-ip-network.js';
import { addressOf, networkIdOf } from './floatingip-params.js';
import { FloatingIpRow, FloatingIpsRepository } from './floatingips.repository.js';

export const FLOATINGIP_TYPE = 'virtual:floatingip';

/** Blazar's floating IP object. */
export function toWire(row: FloatingIpRow): FloatingIpResponse {
  return {
    id: row.id,
    floating_network_id: row.floating_network_id,
    subnet_id: row.subnet_id,
    floating_ip_address: row.floating_ip_address,
    reservable: row.reservable,
    created_at: formatTimestamp(row.created_at),
    updated_at: formatTimestamp(row.updated_at),
  };
}

/** Whether `address` is in `subnet`'s CIDR, its gateway, or in one of its pools. */
export function placeIn(subnet: Subnet, address: string): 'outside' | 'neutron' | 'free' {
  const type = isIPv6(address) ? 'ipv6' : 'ipv4';
  const [prefix, bits] = subnet.cidr.split('/');
  if (isIPv6(prefix) !== (type === 'ipv6')) return 'outside';
  const cidr = new BlockList();
  cidr.addSubnet(prefix, Number(bits), type);
  if (!cidr.check(address, type)) return 'outside';
  const used = new BlockList();
  if (subnet.gatewayIp !== null && isIPv6(subnet.gatewayIp) === (type === 'ipv6')) {
    used.addAddress(subnet.gatewayIp, type);
  }
  for (const pool of subnet.allocationPools) used.addRange(pool.start, pool.end, type);
  return used.check(address, type) ? 'neutron' : 'free';
}

/** /v1/floatingips: the addresses operators register for reservation. */
@Injectable()
export class FloatingIpsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: FloatingIpsRepository,
    private readonly registry: PluginRegistry,
    private readonly clock: Clock,
    @Inject(FLOATING_IP_NETWORK) private readonly network: FloatingIpNetwork,
  ) {}

  /** As in Blazar, the routes exist only where the type is enabled (PLUGINS). */
  private enabled(): void {
    if (!this.registry.types().includes(FLOATINGIP_TYPE)) {
      throw new ClimateError(
        404,
        'NotFound',
        `The ${FLOATINGIP_TYPE} resource type is not enabled (PLUGINS)`,
      );
    }
  }

  async list(): Promise<FloatingIpResponse[]> {
    this.enabled();
    return (await this.repo.list(this.dataSource.manager)).map(toWire);
  }

  async get(id: string): Promise<FloatingIpResponse> {
    this.enabled();
    const row = isUuid(id) ? await this.repo.get(this.dataSource.manager, id) : null;
    if (row === null) throw new NotFound('floatingip_id', id);
    return toWire(row);
  }

  /**
   * Registers an address. With Neutron: the network exists, the address is in one of
   * its subnets, and Neutron would never hand it out by itself (neither the gateway nor
   * in an allocation pool). Without (builtin driver), it is taken as given.
   */
  async create(body: Record<string, unknown>): Promise<FloatingIpResponse> {
    this.enabled();
    const networkId = networkIdOf(body.floating_network_id, 'floating_network_id');
    const address = addressOf(body.floating_ip_address);
    const subnetId = this.network.checks ? await this.subnetFor(networkId, address) : null;
    const row = await withTransaction(this.dataSource, (tx) =>
      this.repo.insert(tx, { networkId, subnetId, address, now: this.clock.now() }),
    );
    if (row === null) {
      throw new Conflict(
        `Floating IP ${address} is already registered on network ${networkId}`,
        'FloatingIPAlreadyExists',
      );
    }
    return toWire(row);
  }

  private async subnetFor(networkId: string, address: string): Promise<string> {
    const subnets = await this.network.subnets(networkId);
    if (subnets === null) {
      throw new InvalidInput(`Network ${networkId} is not found in Neutron`, 'NetworkNotFound');
    }
    for (const subnet of subnets) {
      const place = placeIn(subnet, address);
      if (place === 'outside') continue;
      if (place === 'neutron') {
        throw new InvalidInput(
          `The floating IP ${address} is used in allocation_pools or gateway_ip in subnet ${subnet.id}.`,
          'NeutronUsesFloatingIP',
        );
      }
      return subnet.id;
    }
    throw new ClimateError(
      404,
      'FloatingIPSubnetNotFound',
      `Valid subnet for the floating IP ${address} is not found.`,
    );
  }

  async delete(id: string): Promise<void> {
    this.enabled();
    if (!isUuid(id)) throw new NotFound('floatingip_id', id);
    const result = await withTransaction(this.dataSource, (tx) => this.repo.delete(tx, id));
    if (result === 'none') throw new NotFound('floatingip_id', id);
    if (result === 'busy') {
      throw new Conflict(
        `Floating IP ${id} is allocated to a current or future reservation`,
        'CantDeleteFloatingIP',
      );
    }
  }
}
