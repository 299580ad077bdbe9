import type { EntityManager } from 'typeorm';

/**
 * The hosts that pass, in the order asked, and (when explained) why each other one does
 * not. A rule may always give reasons; the filter drops them unless asked.
 */
export interface FilterAnswer {
  hosts: string[];
  rejected?: Record<string, string>;
}

/** A scheduling request as the filter has checked it. */
export interface SchedulingRequest {
  /** The candidate hosts, or null for every host. */
  names: string[] | null;
  projectId: string;
  flavorExtraSpecs: Record<string, unknown>;
  instanceUuid: string | null;
}

/**
 * A resource type's say in the scheduler filter: the answer for a request that is for
 * one of its reservations (e.g. an instance reservation's flavor), or null when the
 * request is not, so the pool rules decide. Resource plugins provide these.
 */
export interface SchedulingRule {
  schedule(em: EntityManager, request: SchedulingRequest): Promise<FilterAnswer | null>;
}

export const SCHEDULING_RULES = Symbol('SCHEDULING_RULES');
