import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { assertStorable } from './storable.js';

const checked = new WeakSet<object>();

/** A body checked as it was parsed (a large scheduler body, in a worker): not walked again. */
export function markChecked(body: object): void {
  checked.add(body);
}

/** Headers whose values reach the database or name the caller. */
const CHECKED_HEADERS = ['x-project-id', 'x-user-id', 'x-roles', 'idempotency-key'];

/**
 * Input that no field of Climate can hold is refused here, once for every route and
 * before any handler runs (registered globally in app.ts): a NUL character or a lone
 * surrogate anywhere in the identity headers, the path, the query or the JSON body, and
 * a body nested deeper than any request shape (recursive code downstream would overflow).
 */
@Injectable()
export class InputGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    for (const name of CHECKED_HEADERS) assertStorable(req.headers[name], `header ${name}`);
    assertStorable(req.params, 'the path');
    assertStorable(req.query, 'the query');
    if (!isChecked(req.body)) assertStorable(req.body, 'the body');
    return true;
  }
}

function isChecked(body: unknown): boolean {
  return typeof body === 'object' && body !== null && checked.has(body);
}
