import { type ArgumentMetadata, type PipeTransform, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage, type ValidationError } from 'class-validator';
import { InvalidInput } from './errors.js';

/** A key a body class does not declare, checked: its error, or null when it is fine. */
export type OtherKeyCheck = (key: string, value: unknown) => InvalidInput | null;

/** How a body class takes what its properties do not say. */
export interface BodyOptions {
  /**
   * Keys the class does not declare: refused ("Unknown parameter x", as without rules),
   * ignored (dropped), or kept as sent once `check` passes them (a host's capabilities).
   */
  otherKeys: 'refused' | 'ignored' | { check: OtherKeyCheck };
  /** No body at all: refused as not a JSON object (the default), or taken as `{}`. */
  none?: 'refused' | 'empty';
}

const RULES = Symbol('body rules');

/**
 * Body rules for a request class. A body of a class with rules must be a JSON object
 * ("The body must be a JSON object"); a class without them is validated as Nest does.
 */
export function BodyRules(rules: BodyOptions): ClassDecorator {
  return (target) => Reflect.defineMetadata(RULES, rules, target);
}

function rulesOf(type: unknown): BodyOptions | undefined {
  return typeof type === 'function'
    ? (Reflect.getMetadata(RULES, type) as BodyOptions | undefined)
    : undefined;
}

/** One problem of a validation error, with the error name it answers with. */
function problemsOf(e: ValidationError): InvalidInput[] {
  const constraints = e.constraints ?? {};
  // A missing parameter is said once, without what its absent value is not.
  const keys = constraints.isDefined !== undefined ? ['isDefined'] : Object.keys(constraints);
  return keys.map((key) => {
    const message = constraints[key].replace(
      /^property (\S+) should not exist$/,
      'Unknown parameter $1',
    );
    const named = (e.contexts?.[key] as { errorName?: string } | undefined)?.errorName;
    // Missing parameters are named as MissingParameter raises elsewhere are.
    const fallback = message.startsWith('Missing parameter ') ? 'MissingParameter' : 'InvalidInput';
    return new InvalidInput(message, named ?? fallback);
  });
}

/**
 * Blazar-style 400 for DTO validation failures: every problem, in one message; its error
 * name when they all share one (e.g. MissingParameter), else InvalidInput.
 */
export function invalid(errors: ValidationError[]): InvalidInput {
  const problems = errors.flatMap(problemsOf);
  const names = new Set(problems.map((p) => p.errorName));
  return new InvalidInput(
    problems.map((p) => p.message).join('; '),
    names.size === 1 ? [...names][0] : 'InvalidInput',
  );
}

/** What the inner pipes throw: the errors, so that other keys' problems can join them. */
class Failed extends Error {
  constructor(readonly errors: ValidationError[]) {
    super('validation failed');
  }
}

const common = {
  transform: true,
  whitelist: true,
  // A body may come through a decorator of its own (FilterFields); Caller's is no class.
  validateCustomDecorators: true,
  exceptionFactory: (e: ValidationError[]) => new Failed(e),
};
/** Bodies: an unknown key is a 400. */
const strict = new ValidationPipe({ ...common, forbidNonWhitelisted: true });
/** Query strings, and bodies whose other keys are ignored: unknown keys are dropped. */
const lenient = new ValidationPipe({ ...common, forbidNonWhitelisted: false });

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The properties a class validates (those with a class-validator decorator). */
function declared(type: ArgumentMetadata['metatype']): Set<string> {
  const rules = getMetadataStorage().getTargetValidationMetadatas(
    type as NonNullable<typeof type>,
    '',
    true,
    false,
  );
  return new Set(rules.map((r) => r.propertyName));
}

/** The class's properties through `lenient`, the other keys through `check`; the body as sent. */
async function keepOtherKeys(
  body: Record<string, unknown>,
  metadata: ArgumentMetadata,
  check: OtherKeyCheck,
): Promise<Record<string, unknown>> {
  const own = declared(metadata.metatype);
  const entries = Object.entries(body);
  const errors: ValidationError[] = [];
  try {
    await lenient.transform(Object.fromEntries(entries.filter(([k]) => own.has(k))), metadata);
  } catch (error) {
    if (!(error instanceof Failed)) throw error;
    errors.push(...error.errors);
  }
  for (const [key, value] of entries) {
    const problem = own.has(key) ? null : check(key, value);
    if (problem === null) continue;
    const constraints = { otherKey: problem.message };
    errors.push({
      property: key,
      constraints,
      contexts: { otherKey: { errorName: problem.errorName } },
      children: [],
    });
  }
  if (errors.length > 0) throw new Failed(errors);
  return body;
}

async function validateBody(
  value: unknown,
  metadata: ArgumentMetadata,
  rules: BodyOptions,
): Promise<unknown> {
  const body = value === undefined && rules.none === 'empty' ? {} : value;
  if (!isJsonObject(body)) throw new InvalidInput('The body must be a JSON object');
  const { otherKeys } = rules;
  if (otherKeys === 'refused') return strict.transform(body, metadata);
  if (otherKeys === 'ignored') return lenient.transform(body, metadata);
  return keepOtherKeys(body, metadata, otherKeys.check);
}

async function validate(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
  if (metadata.type === 'query') return lenient.transform(value, metadata);
  // A custom decorator may hand over a body too (the scheduler filter's, without its hosts).
  const rules = rulesOf(metadata.metatype);
  return rules === undefined
    ? strict.transform(value, metadata)
    : validateBody(value, metadata, rules);
}

/**
 * The one validation pipe (APP_PIPE): every DTO, its failures as Blazar's 400. Query
 * strings ignore unknown keys, as Blazar ignores them; bodies refuse them unless their
 * class's rules (`@BodyRules`) say otherwise.
 */
export const validationPipe: PipeTransform = {
  async transform(value: unknown, metadata: ArgumentMetadata) {
    try {
      return await validate(value, metadata);
    } catch (error) {
      throw error instanceof Failed ? invalid(error.errors) : error;
    }
  },
};
