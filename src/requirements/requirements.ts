/**
 * Blazar's requirement language for `hypervisor_properties` / `resource_properties`,
 * parsed to a tree and compiled to a SQL boolean with positional parameters, so hosts
 * are filtered in the database. Pure: no NestJS or TypeORM.
 *
 * Forms: "" / "[]" (none), [op, "$key", "value"] with op in == = != < <= > >=,
 * ["and", …] as in Blazar, plus ["or", …], ["not", expr] and ["in", "$key", v, …]
 * (or ["in", "$key", [v, …]]), nested freely within MAX_DEPTH / MAX_NODES.
 */
import { InvalidInput } from '../common/errors.js';
import { badText } from '../common/storable.js';

export type Comparison = '==' | '!=' | '<' | '<=' | '>' | '>=';
export type Requirement =
  | { op: 'and' | 'or'; args: Requirement[] }
  | { op: 'not'; arg: Requirement }
  | { op: Comparison; key: string; value: string }
  | { op: 'in'; key: string; values: string[] };

export interface ColumnSpec {
  sql: string;
  type: 'number' | 'text' | 'boolean';
}

export interface CompileOptions {
  /** Known host fields, by query key (without '$'). */
  columns: Record<string, ColumnSpec>;
  /** SQL of the jsonb column holding extra capabilities (string values). */
  capabilities: string;
  /** Extra-capability names that exist; any other unknown key is a 400. */
  knownProperties: ReadonlySet<string>;
  /** Parameter array to append to; placeholders are $<index+1> of this array. */
  params: unknown[];
}

const COMPARISONS = new Set(['==', '=', '!=', '<', '<=', '>', '>=']);
/** Refuse abuse: nesting depth, and terms plus "in" values in one query. */
export const MAX_DEPTH = 16;
export const MAX_NODES = 256;
const NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;
// The same pattern in SQL, so a non-numeric stored value is never cast (no 22P02).
const NUMBER_SQL = "'^-?[0-9]+(\\.[0-9]+)?$'";
const TRUE = /^(true|1)$/i;
const BOOLEAN = /^(true|false|1|0)$/i;

function malformed(input: unknown, reason: string): InvalidInput {
  const shown = typeof input === 'string' ? input : JSON.stringify(input);
  return new InvalidInput(`Malformed requirements ${shown}: ${reason}`, 'MalformedRequirements');
}

/** Values are strings; JSON numbers and booleans are taken in their string form. */
function scalar(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  return null;
}

class Parser {
  private nodes = 0;
  constructor(private readonly input: unknown) {}

  node(value: unknown, depth: number): Requirement {
    this.count(1);
    if (depth > MAX_DEPTH) throw malformed(this.input, `nested deeper than ${MAX_DEPTH}`);
    if (!Array.isArray(value) || value.length === 0) {
      throw malformed(this.input, 'each term must be a non-empty list');
    }
    const [head, ...rest] = value as unknown[];
    if (head === 'and' || head === 'or') {
      if (rest.length === 0) throw malformed(this.input, `"${head}" needs at least one term`);
      return { op: head, args: rest.map((r) => this.node(r, depth + 1)) };
    }
    if (head === 'not') {
      if (rest.length !== 1) throw malformed(this.input, '"not" takes exactly one term');
      return { op: 'not', arg: this.node(rest[0], depth + 1) };
    }
    if (head === 'in') {
      const key = this.key(rest[0]);
      const raw =
        rest.length === 2 && Array.isArray(rest[1]) ? (rest[1] as unknown[]) : rest.slice(1);
      this.count(raw.length);
      const values = raw.map(scalar);
      if (values.length === 0 || values.some((v) => v === null || v === '')) {
        throw malformed(this.input, '"in" needs one or more non-empty string values');
      }
      this.storable(values as string[]);
      return { op: 'in', key, values: values as string[] };
    }
    if (typeof head === 'string' && COMPARISONS.has(head)) {
      if (rest.length !== 2) throw malformed(this.input, `"${head}" takes a key and a value`);
      const key = this.key(rest[0]);
      const v = scalar(rest[1]);
      if (v === null || v === '') throw malformed(this.input, 'values must be non-empty strings');
      this.storable([v]);
      return { op: head === '=' ? '==' : (head as Comparison), key, value: v };
    }
    throw malformed(this.input, `unknown operator ${JSON.stringify(head) ?? 'undefined'}`);
  }

  /** Values are SQL parameters: PostgreSQL takes no NUL, and a lone surrogate is no text. */
  private storable(values: string[]): void {
    if (values.some((v) => badText(v) !== null)) {
      throw malformed(this.input, 'values must be valid Unicode without NUL characters');
    }
  }

  private count(n: number): void {
    this.nodes += n;
    if (this.nodes > MAX_NODES) throw malformed(this.input, `more than ${MAX_NODES} terms`);
  }

  private key(value: unknown): string {
    if (typeof value !== 'string' || !value.startsWith('$') || value.length < 2) {
      throw malformed(this.input, 'keys are strings that start with $');
    }
    return value.slice(1);
  }
}

/**
 * Parses a query given as a JSON string or an already-decoded list. Empty input means
 * no constraint (null); anything malformed is a 400 MalformedRequirements.
 */
export function parseRequirements(input: unknown): Requirement | null {
  if (input === undefined || input === null || input === '') return null;
  let value: unknown = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input) as unknown;
    } catch {
      throw malformed(input, 'not valid JSON');
    }
  }
  if (Array.isArray(value) && value.length === 0) return null;
  // A bare top-level list of triples (no "and") fails here, as in Blazar.
  return new Parser(input).node(value, 1);
}

const SQL_OP: Record<Comparison, string> = {
  '==': '=',
  '!=': '<>',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
};

const SQL_TYPE: Record<ColumnSpec['type'], string> = {
  number: 'numeric',
  text: 'text',
  boolean: 'boolean',
};

/** A term back in Blazar's form, for error messages raised while compiling. */
type Term = Extract<Requirement, { key: string }>;

function shown(r: Term): unknown[] {
  return r.op === 'in' ? ['in', `$${r.key}`, ...r.values] : [r.op, `$${r.key}`, r.value];
}

class Compiler {
  constructor(private readonly o: CompileOptions) {}

  private bind(value: unknown, type: string): string {
    this.o.params.push(value);
    // Explicit casts: an int column compared with "2.5" must not make PG type $n as int.
    return `$${this.o.params.length}::${type}`;
  }

  expr(r: Requirement): string {
    switch (r.op) {
      case 'and':
      case 'or':
        return `(${r.args.map((a) => this.expr(a)).join(r.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        // NULL-safe: "not" of a term about a missing capability is true.
        return `(NOT COALESCE(${this.expr(r.arg)}, false))`;
      case 'in':
        return this.inList(r);
      default:
        return this.compare(r);
    }
  }

  private column(key: string): ColumnSpec | null {
    if (Object.prototype.hasOwnProperty.call(this.o.columns, key)) return this.o.columns[key];
    if (!this.o.knownProperties.has(key)) {
      throw new InvalidInput(`Unknown property ${key}`, 'UnknownProperty');
    }
    return null;
  }

  /** A query value checked against the column's type, in the form bound to the query. */
  private typed(r: Term, key: string, spec: ColumnSpec, value: string): string | boolean {
    if (spec.type === 'number') {
      if (!NUMBER.test(value)) throw malformed(shown(r), `$${key} compares with numbers`);
      return value; // bound as text and cast to numeric: no float rounding of big values
    }
    if (spec.type === 'boolean') {
      if (!BOOLEAN.test(value)) throw malformed(shown(r), `$${key} compares with true or false`);
      return TRUE.test(value);
    }
    return value;
  }

  private compare(r: Extract<Requirement, { value: string }>): string {
    const { key, op, value } = r;
    const spec = this.column(key);
    if (spec !== null) {
      if (spec.type === 'boolean' && op !== '==' && op !== '!=') {
        throw malformed(shown(r), 'booleans compare with == or != only');
      }
      const param = this.bind(this.typed(r, key, spec, value), SQL_TYPE[spec.type]);
      return `(${spec.sql} ${SQL_OP[op]} ${param})`;
    }
    // Extra capability. A host lacking it yields NULL, so it matches no comparison,
    // not even "!=" (Blazar likewise drops hosts without the capability); only an
    // enclosing "not" turns that into a match.
    const cap = this.capability(key);
    if (!NUMBER.test(value)) return `(${cap} ${SQL_OP[op]} ${this.bind(value, 'text')})`;
    // Numeric query value: compare as numbers ("10" > "9"). A stored value that is
    // not numeric matches only "!=".
    const num = this.numeric(cap);
    const param = this.bind(value, 'numeric');
    if (op === '!=') return `(${cap} IS NOT NULL AND (${num} IS NULL OR ${num} <> ${param}))`;
    return `(${num} ${SQL_OP[op]} ${param})`;
  }

  /** "in" means the same as an "or" of "==" terms. */
  private inList(r: Extract<Requirement, { op: 'in' }>): string {
    const { key, values } = r;
    const spec = this.column(key);
    if (spec !== null) {
      const typed = values.map((v) => this.typed(r, key, spec, v));
      return `(${spec.sql} = ANY(${this.bind(typed, `${SQL_TYPE[spec.type]}[]`)}))`;
    }
    const cap = this.capability(key);
    const numbers = values.filter((v) => NUMBER.test(v));
    const texts = values.filter((v) => !NUMBER.test(v));
    const parts: string[] = [];
    if (numbers.length > 0) {
      parts.push(`${this.numeric(cap)} = ANY(${this.bind(numbers, 'numeric[]')})`);
    }
    if (texts.length > 0) parts.push(`${cap} = ANY(${this.bind(texts, 'text[]')})`);
    return `(${parts.join(' OR ')})`;
  }

  /** The capability's text value; the property name is a parameter too. */
  private capability(key: string): string {
    return `(${this.o.capabilities} ->> ${this.bind(key, 'text')})`;
  }

  /** The capability as a number, or NULL when the stored text is not numeric. */
  private numeric(cap: string): string {
    return `(CASE WHEN ${cap} ~ ${NUMBER_SQL} THEN ${cap}::numeric END)`;
  }
}

/**
 * The requirement as a SQL boolean expression ('TRUE' for null), appending its values to
 * `options.params`. Unknown keys are a 400 UnknownProperty; a value of the wrong type for
 * a host column is a 400 MalformedRequirements.
 */
export function compileRequirements(req: Requirement | null, options: CompileOptions): string {
  return req === null ? 'TRUE' : new Compiler(options).expr(req);
}

/** Every key a requirement mentions, without the `$`, each once. */
export function requirementKeys(req: Requirement | null): string[] {
  if (req === null) return [];
  switch (req.op) {
    case 'and':
    case 'or':
      return [...new Set(req.args.flatMap(requirementKeys))];
    case 'not':
      return requirementKeys(req.arg);
    default:
      return [req.key];
  }
}
