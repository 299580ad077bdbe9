import { applyDecorators } from '@nestjs/common';
import { ApiDefaultResponse, ApiResponse } from '@nestjs/swagger';
import { ErrorResponse } from './error.response.js';

const MEANING = {
  400: 'Invalid input (InvalidInput, MissingParameter, MalformedParameter, …)',
  401: 'No valid X-Auth-Token',
  403: 'Not allowed: the policy rule the route names (x-policy), or a project usage limit (leases)',
  404: 'No such object, or one the caller may not see',
  409: 'Conflicts with the current state (no room, wrong status, concurrent update)',
  412: 'If-Match does not name the current version',
  503: 'The database (or the external enforcement service) cannot be reached; try again',
  504: 'The external enforcement service did not answer in time; nothing was changed',
} as const;

/**
 * The error answers of a route, each with Blazar's error body; any other status (a
 * timeout of the compute service, an internal error) has the same body.
 */
export function ApiErrors(...statuses: (keyof typeof MEANING)[]): MethodDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({ status, description: MEANING[status], type: ErrorResponse }),
    ),
    ApiDefaultResponse({ description: 'Any other error', type: ErrorResponse }),
  );
}
