import { ClimateError } from '../common/errors.js';
import type { KeystoneClient } from './keystone.client.js';
import { openstackCall } from './openstack-http.js';

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

/** Nova's compute API v2.1, called with Climate's service token (or a trust's). */
export class NovaApi {
  constructor(
    private readonly keystone: KeystoneClient,
    private readonly novaUrl: string | null,
  ) {}

  /**
   * One Nova call, with the service token unless another is given; statuses in
   * `tolerated` (already there, already gone) are not errors.
   */
  async call<T>(
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
