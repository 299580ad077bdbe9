/**
 * Domain errors. Each has a stable symbolic name and an honest HTTP status; the global
 * filter renders them as Blazar's body {error_code, error_message, error_name}.
 */
export class ClimateError extends Error {
  constructor(
    readonly status: number,
    readonly errorName: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = errorName;
  }
}

/** Blazar's error body, with Climate's symbolic name beside it. */
export interface ErrorBody {
  error_code: number;
  error_message: string;
  /** As Blazar's: the status again (a number); only an unexpected failure says INTERNAL_SERVER_ERROR. */
  error_name: number | 'INTERNAL_SERVER_ERROR';
  /** The stable symbolic name of the error (e.g. NotEnoughHostsAvailable): beyond Blazar. */
  error_type: string;
}

export function errorBody(status: number, message: string, type: string): ErrorBody {
  return {
    error_code: status,
    error_message: message,
    error_name: type === 'INTERNAL_SERVER_ERROR' ? type : status,
    error_type: type,
  };
}

export class InvalidInput extends ClimateError {
  constructor(message: string, name = 'InvalidInput') {
    super(400, name, message);
  }
}

export class MissingParameter extends InvalidInput {
  constructor(param: string) {
    super(`Missing parameter ${param}`, 'MissingParameter');
  }
}

export class MalformedParameter extends InvalidInput {
  constructor(param: string) {
    super(`Malformed parameter ${param}`, 'MalformedParameter');
  }
}

export class InvalidDate extends InvalidInput {
  constructor(value: string) {
    super(`${value} is an invalid date. Required format: %Y-%m-%d %H:%M`, 'InvalidDate');
  }
}

export class UnsupportedResourceType extends InvalidInput {
  constructor(type: string) {
    super(`The ${type} resource type is not supported`, 'UnsupportedResourceType');
  }
}

export class Unauthorized extends ClimateError {
  constructor(message = 'The request you have made requires authentication.') {
    super(401, 'Unauthorized', message);
  }
}

export class PolicyNotAuthorized extends ClimateError {
  constructor(rule: string) {
    super(403, 'PolicyNotAuthorized', `Policy doesn't allow ${rule} to be performed`);
  }
}

export class NotFound extends ClimateError {
  constructor(kind: string, id: string) {
    super(404, 'NotFound', `Object with {'${kind}': '${id}'} not found`);
  }
}

export class Conflict extends ClimateError {
  constructor(message: string, name = 'Conflict') {
    super(409, name, message);
  }
}

export class InvalidStatus extends Conflict {
  constructor(message = 'Invalid lease status.') {
    super(message, 'InvalidStatus');
  }
}

export class PreconditionFailed extends ClimateError {
  constructor(message: string) {
    super(412, 'PreconditionFailed', message);
  }
}

/** Something Climate needs (its database) cannot be reached now; the caller may retry. */
export class ServiceUnavailable extends ClimateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(503, 'ServiceUnavailable', message, options);
  }
}

/**
 * An action found what it needs still busy (a host the previous lease has not handed
 * back yet). Waiting is not a failure: the manager tries again without counting it as
 * an attempt.
 */
export class ResourceBusy extends Error {
  override name = 'ResourceBusy';
}

/** Whether an error, or one it wraps (`cause`), says a resource is still busy. */
export function isResourceBusy(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) {
    if (e instanceof ResourceBusy) return true;
  }
  return false;
}
