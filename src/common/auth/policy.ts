import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import { NotFound, PolicyNotAuthorized } from '../errors.js';
import type { Identity } from './identity.js';
import type { Credentials, Target } from '../../policy/check.js';
import type { RuleSet } from '../../policy/rule-set.js';

export const RULE = 'climate:rule';

export interface RouteRule {
  rule: string;
  /** The handler decides (its answer depends on what is asked), not the guard. */
  inHandler: boolean;
  /**
   * No token is asked when the rule in force passes for a caller without one (a POLICY_FILE
   * `"@"`): for clients that cannot carry a Keystone token, such as Prometheus.
   */
  tokenless: boolean;
}

/**
 * The policy rule that decides a route. The guard checks it against the caller's own
 * project before the handler runs; handlers of routes on an object check it again
 * against the object's owner. The OpenAPI document names it as `x-policy`.
 */
export function Authorize(
  rule: string,
  options: { inHandler?: boolean; tokenless?: boolean } = {},
): MethodDecorator {
  const value: RouteRule = {
    rule,
    inHandler: options.inHandler ?? false,
    tokenless: options.tokenless ?? false,
  };
  return applyDecorators(SetMetadata(RULE, value), ApiExtension('x-policy', rule));
}

/** The owner of an object, as rules see it (`%(project_id)s`, `%(user_id)s`). */
export interface Owner {
  projectId: string;
  userId?: string | null;
}

function credentials(caller: Identity): Credentials {
  return {
    user_id: caller.userId,
    project_id: caller.projectId,
    roles: caller.roles,
    is_admin: caller.isAdmin,
  };
}

function target(owner: Owner): Target {
  return { project_id: owner.projectId, user_id: owner.userId ?? null };
}

/** The rules in force (defaults and POLICY_FILE), asked about callers. */
export class Policy {
  constructor(readonly rules: RuleSet) {}

  /** Whether the rule passes for the caller, on the owner's object (default: its own). */
  allows(caller: Identity, rule: string, owner: Owner = caller): boolean {
    return this.rules.allows(rule, target(owner), credentials(caller));
  }

  /**
   * `allows` for many objects of one caller (the leases of a list page): the rule is
   * evaluated once per owner, since it sees only the owner's project and user.
   */
  allowsEach(caller: Identity, rule: string): (owner: Owner) => boolean {
    const answers = new Map<string, Map<string | null, boolean>>();
    return (owner) => {
      let byUser = answers.get(owner.projectId);
      if (byUser === undefined) {
        byUser = new Map<string | null, boolean>();
        answers.set(owner.projectId, byUser);
      }
      const user = owner.userId ?? null;
      let answer = byUser.get(user);
      if (answer === undefined) byUser.set(user, (answer = this.allows(caller, rule, owner)));
      return answer;
    };
  }

  /** Whether the rule passes for a caller with no token: no user, project or role. */
  allowsAnyone(rule: string): boolean {
    const nobody: Credentials = { user_id: '', project_id: '', roles: [], is_admin: false };
    return this.rules.allows(rule, {}, nobody);
  }

  /** Blazar's 403 naming the rule unless it passes. */
  enforce(caller: Identity, rule: string, owner: Owner = caller): void {
    if (!this.allows(caller, rule, owner)) throw new PolicyNotAuthorized(rule);
  }

  /**
   * A lease (or what belongs to it) the caller may see under blazar:leases:get; any other
   * is reported absent (404), so ids of other projects do not leak.
   */
  assertCanSee<T extends Owner>(
    caller: Identity,
    owner: T | null,
    kind: string,
    id: string,
  ): asserts owner is T {
    if (owner === null || !this.allows(caller, 'blazar:leases:get', owner)) {
      throw new NotFound(kind, id);
    }
  }
}
