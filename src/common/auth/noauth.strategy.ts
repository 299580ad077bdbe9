import { InvalidInput } from '../errors.js';
import { characters } from '../storable.js';
import {
  AuthStrategy,
  header,
  Headers,
  Identity,
  makeIdentity,
  withImpliedRoles,
} from './identity.js';

/** The leases' project_id and user_id columns: varchar(255). */
const MAX_ID = 255;

function id(headers: Headers, name: string): string {
  const value = header(headers, name)?.trim() || 'admin';
  if (characters(value) > MAX_ID) {
    throw new InvalidInput(`${name} must be at most ${MAX_ID} characters`, 'MalformedParameter');
  }
  return value;
}

/**
 * For a single operator on 127.0.0.1: identity from X-Project-Id, X-User-Id and X-Roles;
 * without them the caller is user admin of project admin with role admin.
 */
export class NoAuthStrategy extends AuthStrategy {
  async authenticate(headers: Headers): Promise<Identity> {
    const project = id(headers, 'X-Project-Id');
    const user = id(headers, 'X-User-Id');
    const rolesHeader = header(headers, 'x-roles');
    const roles =
      rolesHeader === undefined
        ? ['admin']
        : rolesHeader
            .split(',')
            .map((r) => r.trim())
            .filter((r) => r !== '');
    return makeIdentity(user, project, withImpliedRoles(roles));
  }
}
