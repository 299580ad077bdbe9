import type { TokenEntry } from '../../config/tokens-file.js';
import { Unauthorized } from '../errors.js';
import {
  AuthStrategy,
  header,
  Headers,
  Identity,
  makeIdentity,
  withImpliedRoles,
} from './identity.js';

/** Static tokens from a file, sent as X-Auth-Token. */
export class TokensStrategy extends AuthStrategy {
  private readonly tokens = new Map<string, Identity>();

  constructor(entries: Map<string, TokenEntry>) {
    super();
    for (const [token, e] of entries) {
      this.tokens.set(token, makeIdentity(e.user_id, e.project_id, withImpliedRoles(e.roles)));
    }
  }

  async authenticate(headers: Headers): Promise<Identity> {
    const token = header(headers, 'x-auth-token');
    const identity = token === undefined ? undefined : this.tokens.get(token);
    if (identity === undefined) throw new Unauthorized();
    return identity;
  }
}
