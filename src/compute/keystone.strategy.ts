import { KeystoneError, type KeystoneClient } from './keystone.client.js';
import { ClimateError, Unauthorized } from '../common/errors.js';
import { AuthStrategy, header, Headers, Identity, makeIdentity } from '../common/auth/identity.js';

/** X-Auth-Token validated against Keystone v3, cached until the token expires. */
export class KeystoneStrategy extends AuthStrategy {
  private readonly cache = new Map<string, { identity: Identity; expiresAt: number }>();

  constructor(private readonly keystone: KeystoneClient) {
    super();
  }

  async authenticate(headers: Headers): Promise<Identity> {
    const token = header(headers, 'x-auth-token');
    if (token === undefined || token === '') throw new Unauthorized();
    const hit = this.cache.get(token);
    if (hit !== undefined && hit.expiresAt > Date.now()) return hit.identity;
    const info = await this.keystone.validate(token).catch((error: unknown) => {
      // Keystone failing is never the caller's fault, nor a 500: 502, 503 or 504.
      if (error instanceof ClimateError) throw error;
      throw new KeystoneError(`Keystone's answer could not be used: ${String(error)}`, 502, {
        cause: error,
      });
    });
    if (info === null) throw new Unauthorized();
    const identity = { ...makeIdentity(info.userId, info.projectId, info.roles), token };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(token, { identity, expiresAt: info.expiresAt.getTime() });
    return identity;
  }
}
