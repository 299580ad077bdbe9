import type { FlavorSpec, SourceFlavor } from './compute-driver.js';
import type { NovaApi } from './nova-api.js';

interface NovaFlavor {
  id: string;
  name: string;
  vcpus: number;
  ram: number;
  disk: number;
  swap: number | string;
  'OS-FLV-EXT-DATA:ephemeral'?: number;
  'os-flavor-access:is_public'?: boolean;
  extra_specs?: Record<string, string>;
  links?: unknown;
}

/** Nova's flavors: the reservation flavors Climate makes and the source flavors it reads. */
export class NovaFlavors {
  constructor(private readonly api: NovaApi) {}

  /**
   * Flavors cannot change in Nova: one of another size (made with the lease, then the
   * reservation was updated before its start) is deleted and made again, same id.
   */
  async ensure(f: FlavorSpec): Promise<void> {
    const found = await this.api.call<{ flavor?: { vcpus: number; ram: number; disk: number } }>(
      'GET',
      `/flavors/${f.id}`,
      undefined,
      [404],
    );
    const old = found.flavor;
    const resized =
      old !== undefined && (old.vcpus !== f.vcpus || old.ram !== f.ramMb || old.disk !== f.diskGb);
    if (resized) await this.delete(f.id);
    if (old === undefined || resized) {
      const flavor = {
        id: f.id,
        name: f.name,
        vcpus: f.vcpus,
        ram: f.ramMb,
        disk: f.diskGb,
        'OS-FLV-EXT-DATA:ephemeral': f.ephemeralGb ?? 0,
        swap: f.swapMb ?? 0,
        'os-flavor-access:is_public': false,
      };
      await this.api.call('POST', '/flavors', { flavor }, [409]);
    }
    await this.api.call('POST', `/flavors/${f.id}/os-extra_specs`, { extra_specs: f.extraSpecs });
  }

  async get(id: string, projectId: string): Promise<SourceFlavor | null> {
    const path = `/flavors/${encodeURIComponent(id)}`;
    // 2.79 shows the extra specs in the flavor (since 2.61).
    const { flavor } = await this.api.call<{ flavor?: NovaFlavor }>('GET', path, undefined, [404]);
    if (flavor === undefined) return null;
    if (flavor['os-flavor-access:is_public'] === false) {
      const { flavor_access: access } = await this.api.call<{
        flavor_access?: { tenant_id: string }[];
      }>('GET', `${path}/os-flavor-access`, undefined, [404]);
      if (!(access ?? []).some((a) => a.tenant_id === projectId)) return null;
    }
    const shown: Record<string, unknown> = { ...flavor };
    delete shown.links;
    const swap = Number(flavor.swap);
    return {
      id: flavor.id,
      name: flavor.name,
      vcpus: flavor.vcpus,
      ramMb: flavor.ram,
      diskGb: flavor.disk,
      ephemeralGb: flavor['OS-FLV-EXT-DATA:ephemeral'] ?? 0,
      swapMb: Number.isFinite(swap) ? swap : 0,
      extraSpecs: flavor.extra_specs ?? {},
      shown: { ...shown, extra_specs: flavor.extra_specs ?? {} },
    };
  }

  async delete(id: string): Promise<void> {
    await this.api.call('DELETE', `/flavors/${id}`, undefined, [404]);
  }

  async grantAccess(id: string, projectId: string): Promise<void> {
    await this.api.call(
      'POST',
      `/flavors/${id}/action`,
      { addTenantAccess: { tenant: projectId } },
      [409],
    );
  }

  async revokeAccess(id: string, projectId: string): Promise<void> {
    await this.api.call(
      'POST',
      `/flavors/${id}/action`,
      { removeTenantAccess: { tenant: projectId } },
      [404],
    );
  }
}
