import { KeystoneError, type KeystoneClient } from './keystone.client.js';
import { ClimateError, Unauthorized } from '../common/errors.js';
import { AuthStrategy, header, Headers, Identity, makeIdentity } from '../common/auth/identity.js';

/** Climate's service type in the Keystone catalog, which access rules name. */
const SERVICE_TYPE = 'reservation';

export interface TokenCacheOptions {
  /** Longest a validation is reused (keystonemiddleware's token_cache_time); 0: never. */
  cacheSeconds: number;
  /** Most validations kept; the least recently used goes first. */
  cacheEntries: number;
}

/**
 * X-Auth-Token validated against Keystone v3. A validation is reused until the token
 * expires or cacheSeconds pass, whichever is first, so a revoked token stops working
 * within cacheSeconds. Unscoped tokens and application credentials whose access rules
 * do not name the reservation service are refused (401).
 */
export class KeystoneStrategy extends AuthStrategy {
  // A Map iterates in insertion order: re-inserting on a hit makes it an LRU.
  private readonly cache = new Map<string, { identity: Identity; expiresAt: number }>();

  constructor(
    private readonly keystone: KeystoneClient,
    private readonly options: TokenCacheOptions = { cacheSeconds: 300, cacheEntries: 10_000 },
  ) {
    super();
  }

  async authenticate(headers: Headers): Promise<Identity> {
    const token = header(headers, 'x-auth-token');
    if (token === undefined || token === '') throw new Unauthorized();
    const hit = this.cache.get(token);
    if (hit !== undefined) {
      this.cache.delete(token);
      if (hit.expiresAt > Date.now()) {
        this.cache.set(token, hit);
        return hit.identity;
      }
    }
    const info = await this.keystone.validate(token).catch((error: unknown) => {
      // Keystone failing is never the caller's fault, nor a 500: 502, 503 or 504.
      if (error instanceof ClimateError) throw error;
      throw new KeystoneError(`Keystone's answer could not be used: ${String(error)}`, 502, {
        cause: error,
      });
    });
    if (info === null) throw new Unauthorized();
    if (info.accessRules !== null && !info.accessRules.some((r) => r.service === SERVICE_TYPE)) {
      throw new Unauthorized();
    }
    const identity = { ...makeIdentity(info.userId, info.projectId, info.roles), token };
    const expiresAt = Math.min(
      info.expiresAt.getTime(),
      Date.now() + this.options.cacheSeconds * 1000,
    );
    if (expiresAt > Date.now()) this.remember(token, { identity, expiresAt });
    return identity;
  }

  private remember(token: string, entry: { identity: Identity; expiresAt: number }): void {
    this.cache.set(token, entry);
    while (this.cache.size > this.options.cacheEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }

  /** How many validations are kept (for tests of the bound). */
  get cached(): number {
    return this.cache.size;
  }
}
