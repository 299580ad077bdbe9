/**
 * Blazar's requirement language for `hypervisor_properties` / `resource_properties`,
 * parsed to a tree and compiled to a SQL boolean with positional parameters, so hosts
 * are filtered in the database. Pure: no NestJS or TypeORM.
 *
 * Forms: "" / "[]" (none), [op, "$key", "value"] with op in == = != < <= > >=,
 * ["and", …] as in Blazar, plus ["or", …], ["not", expr] and ["in", "$key", v, …].
 */
import { InvalidInput } from '../common/errors.js';

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
  columns: Record<string, ColumnSpec>;
  capabilities: string;
  knownProperties: ReadonlySet<string>;
  params: unknown[];
}

const COMPARISONS = new Set(['==', '=', '!=', '<', '<=', '>', '>=']);
const MAX_DEPTH = 16;
const MAX_NODES = 256;
const NUMBER = /^-?\d+(\.\d+)?$/;
const NUMBER_SQL = "'^-?[0-9]+(\\.[0-9]+)?$'";

function malformed(input: unknown, reason: string): InvalidInput {
  const shown = typeof input === 'string' ? input : JSON.stringify(input);
  return new InvalidInput(`Malformed requirements ${shown}: ${reason}`, 'MalformedRequirements');
}

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
    if (++this.nodes > MAX_NODES) throw malformed(this.input, `more than ${MAX_NODES} terms`);
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
      const values = raw.map(scalar);
      if (values.length === 0 || values.some((v) => v === null)) {
        throw malformed(this.input, '"in" needs one or more string values');
      }
      return { op: 'in', key, values: values as string[] };
    }
    if (typeof head === 'string' && COMPARISONS.has(head)) {
      if (rest.length !== 2) throw malformed(this.input, `"${head}" takes a key and a value`);
      const key = this.key(rest[0]);
      const v = scalar(rest[1]);
      if (v === null || v === '') throw malformed(this.input, 'values must be non-empty strings');
      return { op: head === '=' ? '==' : (head as Comparison), key, value: v };
    }
    throw malformed(this.input, `unknown operator ${JSON.stringify(head)}`);
  }

  private key(value: unknown): string {
    if (typeof value !== 'string' || !value.startsWith('$') || value.length < 2) {
      throw malformed(this.input, 'keys are strings that start with $');
    }
    return value.slice(1);
  }
}

/** Parses a query string or decoded list; null means no constraint. */
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

class Compiler {
  constructor(private readonly o: CompileOptions) {}

  private bind(value: unknown): string {
    this.o.params.push(value);
    return `$${this.o.params.length}`;
  }

  expr(r: Requirement): string {
    switch (r.op) {
      case 'and':
      case 'or':
        return `(${r.args.map((a) => this.expr(a)).join(r.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        // NULL-safe: "not" of a term about a missing capability is true.
        return `(NOT coalesce(${this.expr(r.arg)}, false))`;
      case 'in':
        return this.inList(r.key, r.values);
      default:
        return this.compare(r.key, r.op, r.value);
    }
  }

  private column(key: string): ColumnSpec | null {
    if (Object.prototype.hasOwnProperty.call(this.o.columns, key)) return this.o.columns[key];
    if (!this.o.knownProperties.has(key)) {
      throw new InvalidInput(`Unknown property ${key}`, 'UnknownProperty');
    }
    return null;
  }

  private typed(spec: ColumnSpec, value: string): unknown {
    if (spec.type === 'number') {
      if (!NUMBER.test(value)) throw malformed(value, `$${spec.sql} compares with numbers`);
      return Number(value);
    }
    if (spec.type === 'boolean') {
      if (!/^(true|false|1|0)$/i.test(value))
        throw malformed(value, 'compare booleans with true or false');
      return /^(true|1)$/i.test(value);
    }
    return value;
  }

  private compare(key: string, op: Comparison, value: string): string {
    const spec = this.column(key);
    if (spec !== null) {
      if (spec.type === 'boolean' && op !== '==' && op !== '!=') {
        throw malformed(value, 'booleans compare with == or != only');
      }
      return `(${spec.sql} ${SQL_OP[op]} ${this.bind(this.typed(spec, value))})`;
    }
    // Extra capability: a host lacking it matches nothing (NULL), as in Blazar.
    const cap = `(${this.o.capabilities} ->> ${this.bind(key)})`;
    if (NUMBER.test(value)) {
      const num = `(CASE WHEN ${cap} ~ ${NUMBER_SQL} THEN ${cap}::numeric END)`;
      if (op === '!=') {
        return `(${cap} IS NOT NULL AND (${num} IS NULL OR ${num} <> ${this.bind(Number(value))}))`;
      }
      return `(${num} ${SQL_OP[op]} ${this.bind(Number(value))})`;
    }
    return `(${cap} ${SQL_OP[op]} ${this.bind(value)})`;
  }

  private inList(key: string, values: string[]): string {
    const spec = this.column(key);
    if (spec !== null) {
      const type =
        spec.type === 'number' ? 'numeric' : spec.type === 'boolean' ? 'boolean' : 'text';
      return `(${spec.sql} = ANY(${this.bind(values.map((v) => this.typed(spec, v)))}::${type}[]))`;
    }
    return `((${this.o.capabilities} ->> ${this.bind(key)}) = ANY(${this.bind(values)}::text[]))`;
  }
}

/** The requirement as a SQL boolean over the options' columns ('TRUE' for none). */
export function compileRequirements(req: Requirement | null, options: CompileOptions): string {
  return req === null ? 'TRUE' : new Compiler(options).expr(req);
}

/** Every key a requirement mentions, without the `$`. */
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
