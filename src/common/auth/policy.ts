import { NotFound, PolicyNotAuthorized } from '../errors.js';
import type { Identity } from './identity.js';

/** Admin-only endpoints (hosts, pools, allocations) call this first. */
export function requireAdmin(caller: Identity, rule: string): void {
  if (!caller.isAdmin) throw new PolicyNotAuthorized(rule);
}

/**
 * A project sees only its own leases; admins see all. Another project's lease is
 * reported as absent (404), so ids do not leak.
 */
export function assertCanSee(
  caller: Identity,
  owner: { projectId: string } | null,
  kind: string,
  id: string,
): asserts owner is { projectId: string } {
  if (owner === null || (!caller.isAdmin && owner.projectId !== caller.projectId)) {
    throw new NotFound(kind, id);
  }
}
