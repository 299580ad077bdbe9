import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AuthStrategy, Identity } from './identity.js';
import { Policy, RULE, type RouteRule } from './policy.js';

const PUBLIC = 'climate:public';
const OPS_PORT = Symbol('climate:ops-port');

/** Routes anyone may call: version discovery and the health probes. */
export const Public = () => SetMetadata(PUBLIC, true);

/**
 * Marks a request that came in on METRICS_PORT (only /metrics, /healthz and /readyz get
 * there): that port asks for no token and no rule, as before policies; an operator keeps
 * it off the public network (METRICS_HOST, a firewall).
 */
export function markOpsPort(request: object): void {
  (request as { [OPS_PORT]?: true })[OPS_PORT] = true;
}

export type AuthedRequest = Request & { identity?: Identity; [OPS_PORT]?: true };

@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly strategy: AuthStrategy,
    private readonly reflector: Reflector,
    private readonly policy: Policy,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<AuthedRequest>();
    // No identity: PolicyGuard lets it through.
    if (request[OPS_PORT] === true) return true;
    const route = this.reflector.get<RouteRule | undefined>(RULE, context.getHandler());
    if (route?.tokenless === true && this.policy.allowsAnyone(route.rule)) return true;
    // The scheduler filter's gate authenticates before reading the body (filter-body.ts).
    request.identity ??= await this.strategy.authenticate(request.headers);
    return true;
  }
}
