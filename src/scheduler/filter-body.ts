import { json } from 'express';

/** The one route whose body names the fleet: every candidate host of a scheduling request. */
export const FILTER_PATH = '/v1/scheduler/filter';

/** 100,000 host names of 100 characters with their quotes and commas; others keep 100 KB. */
export const FILTER_BODY_LIMIT = '16mb';

const parse = json({ limit: FILTER_BODY_LIMIT });

/**
 * The JSON parser of FILTER_PATH, mounted in app.ts before Nest's own (which then skips a
 * parsed body). A named wrapper: Nest leaves out its parser when one called `jsonParser`
 * is already mounted, and that would lift the limit of every route.
 */
export function filterBodyParser(...args: Parameters<typeof parse>): void {
  parse(...args);
}
