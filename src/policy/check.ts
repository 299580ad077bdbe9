/**
 * oslo.policy's check language: `role:admin or (role:member and project_id:%(project_id)s)`.
 * Pure: parsing and evaluation only, no framework.
 */

export type Check =
  | { kind: 'true' }
  | { kind: 'false' }
  | { kind: 'not'; check: Check }
  | { kind: 'and'; checks: Check[] }
  | { kind: 'or'; checks: Check[] }
  | { kind: 'rule'; name: string }
  | { kind: 'role'; match: string }
  /** `field:match`: a credential (or a literal on the left) compared with the match. */
  | { kind: 'generic'; field: string; match: string };

/** Who asks: the fields a check may name on the left of the colon. */
export interface Credentials {
  user_id: string;
  project_id: string;
  roles: string[];
  is_admin: boolean;
  [field: string]: unknown;
}

/** What is acted on: the fields `%(name)s` substitutes (the lease's project_id, user_id, …). */
export type Target = Record<string, unknown>;

export class CheckSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckSyntaxError';
  }
}

const KEYWORDS = new Set(['and', 'or', 'not']);

/**
 * Splits as oslo.policy does: on whitespace, then opening parentheses peeled off the
 * front of a word and closing ones off its end (so `%(project_id)s)` keeps its own).
 */
function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const word of text
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '')) {
    let start = 0;
    let end = word.length;
    const open: string[] = [];
    const close: string[] = [];
    while (start < end && word[start] === '(') {
      open.push('(');
      start++;
    }
    while (end > start && word[end - 1] === ')') {
      close.push(')');
      end--;
    }
    tokens.push(...open);
    if (end > start) tokens.push(word.slice(start, end));
    tokens.push(...close);
  }
  return tokens;
}

function unquote(value: string): string {
  const quoted = /^(['"])(.*)\1$/.exec(value);
  return quoted === null ? value : quoted[2];
}

function atom(token: string): Check {
  if (token === '@') return { kind: 'true' };
  if (token === '!') return { kind: 'false' };
  const colon = token.indexOf(':');
  if (colon <= 0 || colon === token.length - 1) {
    throw new CheckSyntaxError(
      `"${token}" is not a check (use kind:value, @, !, and, or, not, parentheses)`,
    );
  }
  const kind = token.slice(0, colon);
  const match = unquote(token.slice(colon + 1));
  if (kind === 'rule') return { kind: 'rule', name: match };
  if (kind === 'role') return { kind: 'role', match };
  if (kind === 'http' || kind === 'https') {
    throw new CheckSyntaxError(`"${token}": http checks are not supported`);
  }
  return { kind: 'generic', field: kind, match };
}

/** Parses a check string; an empty one always passes, as in oslo.policy. */
export function parseCheck(text: string): Check {
  const tokens = tokenize(text);
  if (tokens.length === 0) return { kind: 'true' };
  let at = 0;
  const peek = () => tokens[at]?.toLowerCase();

  const expression = (): Check => {
    const checks = [conjunction()];
    while (peek() === 'or') {
      at++;
      checks.push(conjunction());
    }
    return checks.length === 1 ? checks[0] : { kind: 'or', checks };
  };
  const conjunction = (): Check => {
    const checks = [negation()];
    while (peek() === 'and') {
      at++;
      checks.push(negation());
    }
    return checks.length === 1 ? checks[0] : { kind: 'and', checks };
  };
  const negation = (): Check => {
    if (peek() === 'not') {
      at++;
      return { kind: 'not', check: negation() };
    }
    return primary();
  };
  const primary = (): Check => {
    const token = tokens[at];
    if (token === undefined) throw new CheckSyntaxError('ends where a check was expected');
    if (token === ')') throw new CheckSyntaxError('")" where a check was expected');
    if (KEYWORDS.has(token.toLowerCase())) {
      throw new CheckSyntaxError(`"${token}" where a check was expected`);
    }
    at++;
    if (token !== '(') return atom(token);
    const inner = expression();
    if (tokens[at] !== ')') throw new CheckSyntaxError('"(" is never closed');
    at++;
    return inner;
  };

  const check = expression();
  if (at < tokens.length) {
    throw new CheckSyntaxError(`unexpected "${tokens[at]}" after a complete check`);
  }
  return check;
}

/** The rules a check names with `rule:`, for checking that each exists. */
export function ruleNames(check: Check): string[] {
  switch (check.kind) {
    case 'rule':
      return [check.name];
    case 'not':
      return ruleNames(check.check);
    case 'and':
    case 'or':
      return check.checks.flatMap(ruleNames);
    default:
      return [];
  }
}

/** `%(name)s` replaced from the target; null when the target lacks a field (the check fails). */
function substitute(match: string, target: Target): string | null {
  let missing = false;
  const text = match.replace(/%\(([^)]+)\)s/g, (_, name: string) => {
    const value = target[name];
    if (value === undefined || value === null) {
      missing = true;
      return '';
    }
    return pythonString(value);
  });
  return missing ? null : text;
}

/** Python's str() of a credential value, so `is_admin:True` matches a boolean. */
function pythonString(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return value.toString();
  return JSON.stringify(value) ?? '';
}

/** A literal on the left: 'quoted', True, False or a number. */
function literal(field: string): string | null {
  if (/^(['"]).*\1$/.test(field)) return field.slice(1, -1);
  if (field === 'True' || field === 'False' || /^-?\d+(\.\d+)?$/.test(field)) return field;
  return null;
}

/** A credential by dotted path (`token.project.id`). */
function credential(credentials: Credentials, path: string): unknown {
  let value: unknown = credentials;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

export type RuleLookup = (name: string) => Check | undefined;

/** Evaluates a check; `rule:` names are looked up (an unknown one fails, as in oslo). */
export function evaluate(
  check: Check,
  target: Target,
  credentials: Credentials,
  rules: RuleLookup,
): boolean {
  const recurse = (c: Check) => evaluate(c, target, credentials, rules);
  switch (check.kind) {
    case 'true':
      return true;
    case 'false':
      return false;
    case 'not':
      return !recurse(check.check);
    case 'and':
      return check.checks.every(recurse);
    case 'or':
      return check.checks.some(recurse);
    case 'rule': {
      const rule = rules(check.name);
      return rule !== undefined && recurse(rule);
    }
    case 'role': {
      const role = substitute(check.match, target);
      if (role === null) return false;
      return credentials.roles.some((r) => r.toLowerCase() === role.toLowerCase());
    }
    case 'generic': {
      const match = substitute(check.match, target);
      if (match === null) return false;
      const left = literal(check.field);
      if (left !== null) return left === match;
      const value = credential(credentials, check.field);
      if (Array.isArray(value)) return value.map(pythonString).includes(match);
      return value !== undefined && pythonString(value) === match;
    }
  }
}
