import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { Unauthorized } from '../errors.js';
import type { AuthedRequest } from './auth.guard.js';
import type { Identity } from './identity.js';

/** The authenticated caller of this request. */
export const Caller = createParamDecorator((_: unknown, context: ExecutionContext): Identity => {
  const identity = context.switchToHttp().getRequest<AuthedRequest>().identity;
  if (identity === undefined) throw new Unauthorized();
  return identity;
});
