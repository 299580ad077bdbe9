import { ClimateError, InvalidInput } from '../common/errors.js';

/** Blazar's MaxLeaseDurationException: 400 on create and on update (Blazar: 403 on create). */
export class MaxLeaseDurationException extends InvalidInput {
  constructor(seconds: number, max: number) {
    super(
      `Lease duration of ${seconds} seconds must be less than or equal to the maximum ` +
        `lease duration of ${max} seconds.`,
      'MaxLeaseDurationException',
    );
  }
}

/** Blazar's generic text when the external service refuses without a message. */
export const GENERIC_DENY_MSG = 'External service enforcement filter denied the request.';

/** The external service refused the lease (403, or a 4xx as Blazar treats it): 400. */
export class ExternalServiceFilterException extends InvalidInput {
  constructor(message: string) {
    super(message, 'ExternalServiceFilterException');
  }
}

/**
 * The external service could not decide: unreachable or a 5xx (503), too slow (504).
 * Nothing was created or changed; the caller may retry.
 */
export class ExternalServiceUnavailable extends ClimateError {
  constructor(message: string, status: 503 | 504, options?: { cause?: unknown }) {
    super(status, 'ExternalServiceUnavailable', message, options);
  }
}

/** A project's own limit (PROJECT_MAX_HOSTS, PROJECT_MAX_HOST_HOURS): 403. */
export class ProjectLimitExceeded extends ClimateError {
  constructor(message: string) {
    super(403, 'ProjectLimitExceeded', message);
  }
}
