/** Who is calling: resolved once per request by the auth strategy. */
export interface Identity {
  userId: string;
  projectId: string;
  roles: string[];
  isAdmin: boolean;
  /** The caller's Keystone token (keystone auth only), to make a trust from. */
  token?: string;
}

/** Keystone's default implied roles: admin implies member, member implies reader. */
const IMPLIES: Record<string, string[]> = { admin: ['member', 'reader'], member: ['reader'] };

/**
 * The roles as Keystone gives them in a token: with the roles they imply. For the
 * noauth and tokens strategies; Keystone's tokens carry the implied roles already.
 */
export function withImpliedRoles(roles: string[]): string[] {
  const all = new Set(roles);
  for (const role of roles)
    for (const implied of IMPLIES[role.toLowerCase()] ?? []) all.add(implied);
  return [...all];
}

export function makeIdentity(userId: string, projectId: string, roles: string[]): Identity {
  return { userId, projectId, roles, isAdmin: roles.includes('admin') };
}

export type Headers = Record<string, string | string[] | undefined>;

export function header(headers: Headers, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Turns request headers into an identity, or throws Unauthorized. */
export abstract class AuthStrategy {
  abstract authenticate(headers: Headers): Promise<Identity>;
}
