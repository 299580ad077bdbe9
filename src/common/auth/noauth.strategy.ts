import { AuthStrategy, header, Headers, Identity, makeIdentity } from './identity.js';

/**
 * For a single operator on 127.0.0.1: identity from X-Project-Id, X-User-Id and X-Roles;
 * without them the caller is user admin of project admin with role admin.
 */
export class NoAuthStrategy extends AuthStrategy {
  async authenticate(headers: Headers): Promise<Identity> {
    const project = header(headers, 'x-project-id')?.trim() || 'admin';
    const user = header(headers, 'x-user-id')?.trim() || 'admin';
    const rolesHeader = header(headers, 'x-roles');
    const roles =
      rolesHeader === undefined
        ? ['admin']
        : rolesHeader
            .split(',')
            .map((r) => r.trim())
            .filter((r) => r !== '');
    return makeIdentity(user, project, roles);
  }
}
