import { CLIMATE_DISABLE_PREFIX, type PowerState } from './compute-driver.js';
import { NovaApi, NovaError } from './nova-api.js';

/** The reason Climate gives Nova when its power plan takes a host out of service. */
export const POWER_OFF_REASON = `${CLIMATE_DISABLE_PREFIX} powered off by power plan`;

/** Whether Climate disabled the service (its reason starts with the prefix). */
export function disabledByClimate(reason: string | null | undefined): boolean {
  return typeof reason === 'string' && reason.startsWith(CLIMATE_DISABLE_PREFIX);
}

interface ComputeService {
  id: string;
  host: string;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
}

/**
 * Power through Nova alone: "off" is the host's nova-compute service disabled with
 * Climate's reason, so the scheduler places nothing there; "on" is the service enabled
 * again. Both are immediate. A service an admin disabled (another reason) is left as it
 * is: it is the admin's, and Climate's maintenance treats it as failed.
 */
export class NovaPower {
  constructor(
    private readonly api: NovaApi,
    private readonly serviceHost: (hypervisorHostname: string) => Promise<string>,
  ) {}

  async powerOff(host: string): Promise<void> {
    const service = await this.service(host);
    if (service.status !== 'enabled') return;
    await this.api.call('PUT', `/os-services/${service.id}`, {
      status: 'disabled',
      disabled_reason: POWER_OFF_REASON,
    });
  }

  async powerOn(host: string): Promise<void> {
    const service = await this.service(host);
    if (service.status === 'enabled' || !disabledByClimate(service.disabled_reason)) return;
    await this.api.call('PUT', `/os-services/${service.id}`, { status: 'enabled' });
  }

  async state(host: string): Promise<PowerState> {
    const service = await this.service(host);
    return service.status === 'disabled' && disabledByClimate(service.disabled_reason)
      ? 'off'
      : 'on';
  }

  /** The host's nova-compute service (ids are UUIDs from microversion 2.53 on). */
  private async service(host: string): Promise<ComputeService> {
    const name = await this.serviceHost(host);
    const { services } = await this.api.call<{ services: ComputeService[] }>(
      'GET',
      `/os-services?binary=nova-compute&host=${encodeURIComponent(name)}`,
    );
    const found = services.find((s) => s.host === name);
    if (found === undefined) throw new NovaError(404, `No nova-compute service on ${name}`);
    return found;
  }
}
