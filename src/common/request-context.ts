import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestContext {
  requestId: string;
}

/** Carries the request id into logs written anywhere below the request. */
export const requestContext = new AsyncLocalStorage<RequestContext>();
