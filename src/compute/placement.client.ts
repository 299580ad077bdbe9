import type { KeystoneClient } from './keystone.client.js';
import { ComputeServiceError, openstackCall } from './openstack-http.js';

/** Blazar's resource class for an instance reservation: CUSTOM_RESERVATION_<ID>. */
export function reservationClass(reservationId: string): string {
  return `CUSTOM_RESERVATION_${reservationId.toUpperCase().replace(/-/g, '_')}`;
}

/** Blazar's provider of a host's reservation inventory, a child of its compute node. */
export function reservationProvider(hypervisorHostname: string): string {
  return `blazar_${hypervisorHostname}`;
}

interface Provider {
  uuid: string;
  name: string;
}

const VERSION = 'placement 1.14';
const GENERATION_RETRIES = 5;

/**
 * Nova's Placement, where an instance reservation gets its exact size: an inventory of
 * its own resource class on a child provider of each of its hosts, as many as the slots
 * there. The reservation's flavor asks for one unit, so Placement refuses the server
 * past the reservation's amount. Nova's resource tracker leaves child providers alone.
 */
export class PlacementClient {
  private readonly providers = new Map<string, Provider>();

  constructor(
    private readonly keystone: KeystoneClient,
    private readonly url: string | null,
  ) {}

  /** Sets the reservation's inventory on each host to its slots there (0: none). */
  async setInventory(reservationId: string, slots: Map<string, number>): Promise<void> {
    const rc = reservationClass(reservationId);
    if ([...slots.values()].some((n) => n > 0)) {
      await this.call('PUT', `/resource_classes/${rc}`, undefined, []);
    }
    for (const [host, total] of slots) {
      if (total > 0) await this.putInventory(await this.ensureProvider(host), rc, total);
      else await this.deleteInventory(host, rc);
    }
  }

  /** Removes the reservation's inventories from these hosts, then its resource class. */
  async deleteReservation(reservationId: string, hosts: string[]): Promise<void> {
    const rc = reservationClass(reservationId);
    for (const host of hosts) await this.deleteInventory(host, rc);
    // 409: inventories of it remain elsewhere (a host Climate no longer knows of).
    await this.call('DELETE', `/resource_classes/${rc}`, undefined, [404, 409]);
  }

  /** The reservation's inventory per host, for hosts that have one. */
  async sizes(reservationId: string, hosts: string[]): Promise<Map<string, number>> {
    const rc = reservationClass(reservationId);
    const out = new Map<string, number>();
    for (const host of hosts) {
      const provider = await this.provider(reservationProvider(host));
      if (provider === null) continue;
      const { body } = await this.call(
        'GET',
        `/resource_providers/${provider.uuid}/inventories`,
        undefined,
        [],
      );
      const total = (body as { inventories: Record<string, { total: number }> }).inventories[rc]
        ?.total;
      if (total !== undefined) out.set(host, total);
    }
    return out;
  }

  /** Reservation ids that have a class of their own (`CUSTOM_RESERVATION_<ID>`). */
  async reservationClasses(): Promise<string[]> {
    const { body } = await this.call('GET', '/resource_classes', undefined, []);
    const prefix = 'CUSTOM_RESERVATION_';
    return ((body as { resource_classes: { name: string }[] }).resource_classes ?? [])
      .map((c) => c.name)
      .filter((n) => n.startsWith(prefix))
      .map((n) => n.slice(prefix.length).toLowerCase().replace(/_/g, '-'));
  }

  /** Servers (consumers) holding units of the reservation's class, with their host. */
  async consumers(
    reservationId: string,
    hosts: string[],
  ): Promise<{ serverId: string; host: string }[]> {
    const rc = reservationClass(reservationId);
    const found: { serverId: string; host: string }[] = [];
    for (const host of hosts) {
      const provider = await this.provider(reservationProvider(host));
      if (provider === null) continue;
      const { body } = await this.call(
        'GET',
        `/resource_providers/${provider.uuid}/allocations`,
        undefined,
        [],
      );
      const allocations =
        (body as { allocations?: Record<string, { resources: Record<string, number> }> })
          .allocations ?? {};
      for (const [consumer, a] of Object.entries(allocations)) {
        if ((a.resources[rc] ?? 0) > 0) found.push({ serverId: consumer, host });
      }
    }
    return found;
  }

  /**
   * Names of the root providers (compute nodes, named as their hypervisor) with every
   * `required` trait and none of the `forbidden` ones (`!` needs microversion 1.22).
   */
  async rootsWithTraits(required: string[], forbidden: string[]): Promise<string[]> {
    const traits = [...required, ...forbidden.map((t) => `!${t}`)].join(',');
    const base = this.url ?? (await this.keystone.endpoint('placement'));
    const res = await openstackCall({
      method: 'GET',
      url: `${base}/resource_providers?required=${encodeURIComponent(traits)}`,
      token: await this.keystone.serviceToken(),
      headers: { 'OpenStack-API-Version': 'placement 1.22' },
    });
    if (res.status >= 300) {
      throw new ComputeServiceError(
        `Placement GET /resource_providers answered ${res.status}: ${res.text.slice(0, 300)}`,
      );
    }
    const providers =
      (res.body as { resource_providers?: (Provider & { root_provider_uuid?: string })[] })
        .resource_providers ?? [];
    return providers.filter((p) => (p.root_provider_uuid ?? p.uuid) === p.uuid).map((p) => p.name);
  }

  private async putInventory(provider: Provider, rc: string, total: number): Promise<void> {
    const path = `/resource_providers/${provider.uuid}/inventories`;
    for (let attempt = 0; attempt < GENERATION_RETRIES; attempt++) {
      const { body } = await this.call('GET', path, undefined, []);
      const current = body as {
        resource_provider_generation: number;
        inventories: Record<string, { total: number }>;
      };
      if (current.inventories[rc]?.total === total) return;
      const record = {
        resource_provider_generation: current.resource_provider_generation,
        total,
        reserved: 0,
        min_unit: 1,
        max_unit: 1,
        step_size: 1,
        allocation_ratio: 1.0,
      };
      // A new class on the provider is created (POST); an existing one is set (PUT).
      const put =
        current.inventories[rc] === undefined
          ? await this.call('POST', path, { resource_class: rc, ...record }, [409])
          : await this.call('PUT', `${path}/${rc}`, record, [409]);
      if (put.status < 300) return;
      // Another writer moved the generation on: read it again.
    }
    throw new ComputeServiceError(`Placement kept refusing the inventory of ${rc}`);
  }

  private async deleteInventory(host: string, rc: string): Promise<void> {
    const provider = await this.provider(reservationProvider(host));
    if (provider === null) return;
    const res = await this.call(
      'DELETE',
      `/resource_providers/${provider.uuid}/inventories/${rc}`,
      undefined,
      [404, 409],
    );
    if (res.status === 409) {
      throw new ComputeServiceError(
        `Placement keeps ${rc} on ${host}: servers still hold it (${res.text.slice(0, 200)})`,
      );
    }
  }

  private async ensureProvider(host: string): Promise<Provider> {
    const name = reservationProvider(host);
    const found = await this.provider(name);
    if (found !== null) return found;
    const node = await this.provider(host);
    if (node === null) {
      throw new ComputeServiceError(`Placement has no resource provider for host ${host}`);
    }
    // 409: made meanwhile by another replica; read it back either way.
    await this.call(
      'POST',
      '/resource_providers',
      { name, parent_provider_uuid: node.uuid },
      [409],
    );
    const made = await this.provider(name);
    if (made === null) throw new ComputeServiceError(`Placement did not create provider ${name}`);
    return made;
  }

  private async provider(name: string): Promise<Provider | null> {
    const cached = this.providers.get(name);
    if (cached !== undefined) return cached;
    const { body } = await this.call(
      'GET',
      `/resource_providers?name=${encodeURIComponent(name)}`,
      undefined,
      [],
    );
    const found = (body as { resource_providers?: Provider[] }).resource_providers?.[0] ?? null;
    if (found !== null) this.providers.set(name, found);
    return found;
  }

  private async call(
    method: string,
    path: string,
    body: unknown,
    tolerated: number[],
  ): Promise<{ status: number; body: unknown; text: string }> {
    const base = this.url ?? (await this.keystone.endpoint('placement'));
    const res = await openstackCall({
      method,
      url: `${base}${path}`,
      token: await this.keystone.serviceToken(),
      headers: { 'OpenStack-API-Version': VERSION },
      body,
    });
    if (res.status >= 300 && !tolerated.includes(res.status)) {
      if (res.status === 404 && method !== 'GET') this.providers.clear();
      throw new ComputeServiceError(
        `Placement ${method} ${path} answered ${res.status}: ${res.text.slice(0, 300)}`,
      );
    }
    return res;
  }
}
