import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AuthStrategy, Identity } from './identity.js';

const PUBLIC = 'climate:public';

/** Routes anyone may call: version discovery and the health probe. */
export const Public = () => SetMetadata(PUBLIC, true);

export type AuthedRequest = Request & { identity?: Identity };

@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly strategy: AuthStrategy,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<AuthedRequest>();
    // The scheduler filter's gate authenticates before reading the body (filter-body.ts).
    request.identity ??= await this.strategy.authenticate(request.headers);
    return true;
  }
}
