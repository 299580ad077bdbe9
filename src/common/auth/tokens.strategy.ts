import { readFileSync } from 'node:fs';
import { Unauthorized } from '../errors.js';
import {
  AuthStrategy,
  header,
  Headers,
  Identity,
  makeIdentity,
  withImpliedRoles,
} from './identity.js';

interface TokenEntry {
  user_id: string;
  project_id: string;
  roles: string[];
}

function isEntry(value: unknown): value is TokenEntry {
  const v = value as Partial<TokenEntry> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.user_id === 'string' &&
    typeof v.project_id === 'string' &&
    Array.isArray(v.roles) &&
    v.roles.every((r) => typeof r === 'string')
  );
}

/** Parses the tokens file; throws an error that tells the operator what is wrong. */
export function readTokensFile(path: string): Map<string, Identity> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`AUTH_TOKENS_FILE ${path}: cannot read it as JSON`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`AUTH_TOKENS_FILE ${path}: must be a JSON object of token -> identity`);
  }
  const tokens = new Map<string, Identity>();
  for (const [token, entry] of Object.entries(parsed)) {
    if (!isEntry(entry)) {
      throw new Error(
        `AUTH_TOKENS_FILE ${path}: token ${token.slice(0, 4)}… needs user_id, project_id, roles[]`,
      );
    }
    const roles = withImpliedRoles(entry.roles);
    tokens.set(token, makeIdentity(entry.user_id, entry.project_id, roles));
  }
  return tokens;
}

/** Static tokens from a file, sent as X-Auth-Token. */
export class TokensStrategy extends AuthStrategy {
  constructor(private readonly tokens: Map<string, Identity>) {
    super();
  }

  async authenticate(headers: Headers): Promise<Identity> {
    const token = header(headers, 'x-auth-token');
    const identity = token === undefined ? undefined : this.tokens.get(token);
    if (identity === undefined) throw new Unauthorized();
    return identity;
  }
}
