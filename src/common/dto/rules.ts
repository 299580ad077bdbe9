import { ValidateBy } from 'class-validator';

/** Blazar's idea of an absent parameter: not sent, null or empty. */
export const absent = (value: unknown): boolean =>
  value === undefined || value === null || value === '';

/** Not sent at all (null is a value, and malformed where null is not taken). */
export const leftOut = (value: unknown): boolean => value === undefined;

/**
 * "Missing parameter <name>" (MissingParameter) when `isMissing` says the value is;
 * `object` is the whole body, for a parameter that has another name too.
 */
export function Present(
  name: string,
  isMissing: (value: unknown, object: object) => boolean = absent,
): PropertyDecorator {
  return ValidateBy(
    {
      name: 'present',
      validator: { validate: (value, args) => !isMissing(value, args?.object ?? {}) },
    },
    { message: `Missing parameter ${name}`, context: { errorName: 'MissingParameter' } },
  );
}

/**
 * The message `problem` finds in a value that is there (a missing one is Present's to
 * say), answered with `errorName`. `object` is the whole body, for rules across keys.
 */
export function WellFormed(
  problem: (value: unknown, object: object) => string | null,
  errorName = 'MalformedParameter',
  isMissing: (value: unknown, object: object) => boolean = absent,
): PropertyDecorator {
  return ValidateBy(
    {
      name: 'wellFormed',
      validator: {
        validate: (value, args) =>
          isMissing(value, args?.object ?? {}) || problem(value, args?.object ?? {}) === null,
        defaultMessage: (args) =>
          args === undefined ? '' : (problem(args.value, args.object) ?? ''),
      },
    },
    { context: { errorName } },
  );
}
