import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { AuthedRequest } from './auth.guard.js';
import { Policy, RULE, type RouteRule } from './policy.js';

/**
 * Runs after AuthGuard: the route's rule (from @Authorize) against the caller's own
 * project. A route that is not public and names no rule is an error (500), so a new
 * route cannot be served to everyone by forgetting its rule.
 */
@Injectable()
export class PolicyGuard implements CanActivate {
  constructor(
    private readonly policy: Policy,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const identity = context.switchToHttp().getRequest<AuthedRequest>().identity;
    // Public routes: AuthGuard let them through without an identity.
    if (identity === undefined) return true;
    const route = this.reflector.get<RouteRule | undefined>(RULE, context.getHandler());
    if (route === undefined)
      throw new Error(
        `${context.getClass().name}.${context.getHandler().name} names no policy rule`,
      );
    if (!route.inHandler) this.policy.enforce(identity, route.rule);
    return true;
  }
}
