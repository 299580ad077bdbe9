import { InvalidInput } from '../common/errors.js';
import {
  compileRequirements,
  MAX_DEPTH,
  MAX_NODES,
  parseRequirements,
  requirementKeys,
  type ColumnSpec,
  type Requirement,
} from './requirements.js';

function thrown(fn: () => unknown): InvalidInput {
  try {
    fn();
  } catch (e) {
    if (e instanceof InvalidInput) return e;
    throw e;
  }
  throw new Error('expected an InvalidInput');
}

const nest = (levels: number): unknown =>
  Array.from({ length: levels - 1 }).reduce<unknown>((acc) => ['not', acc], ['==', '$a', '1']);

describe('parseRequirements', () => {
  const eq = (key: string, value: string): Requirement => ({ op: '==', key, value });

  it.each<[string, unknown, Requirement | null]>([
    ['empty string', '', null],
    ['empty JSON list', '[]', null],
    ['empty JSON list with spaces', ' [ ] ', null],
    ['empty list', [], null],
    ['null', null, null],
    ['undefined', undefined, null],
    ['a triple string', '["==", "$vcpus", "4"]', eq('vcpus', '4')],
    ['"=" as "=="', '["=", "$gpu", "True"]', eq('gpu', 'True')],
    ['"!="', '["!=", "$a", "x"]', { op: '!=', key: 'a', value: 'x' }],
    ['"<"', '["<", "$a", "1"]', { op: '<', key: 'a', value: '1' }],
    ['"<="', '["<=", "$a", "1"]', { op: '<=', key: 'a', value: '1' }],
    ['">"', '[">", "$a", "1"]', { op: '>', key: 'a', value: '1' }],
    ['">="', '[">=", "$a", "1"]', { op: '>=', key: 'a', value: '1' }],
    ['a decoded triple', ['==', '$rack', 'r1'], eq('rack', 'r1')],
    ['a JSON number', ['>=', '$memory_mb', 4096], { op: '>=', key: 'memory_mb', value: '4096' }],
    ['a negative decimal', '[">", "$t", -2.5]', { op: '>', key: 't', value: '-2.5' }],
    ['a JSON boolean', '["==", "$reservable", false]', eq('reservable', 'false')],
    [
      'Blazar\'s "and"',
      '["and", ["==", "$a", "1"], ["!=", "$b", "x"]]',
      { op: 'and', args: [eq('a', '1'), { op: '!=', key: 'b', value: 'x' }] },
    ],
    ['a one-term "or"', '["or", ["==", "$a", "1"]]', { op: 'or', args: [eq('a', '1')] }],
    ['"not"', '["not", ["==", "$a", "1"]]', { op: 'not', arg: eq('a', '1') }],
    [
      'variadic "in"',
      '["in", "$rack", "r1", "r2"]',
      { op: 'in', key: 'rack', values: ['r1', 'r2'] },
    ],
    [
      '"in" with a list',
      '["in", "$rack", ["r1", 2]]',
      { op: 'in', key: 'rack', values: ['r1', '2'] },
    ],
    [
      'nesting',
      '["or", ["and", ["==", "$a", "1"], ["not", ["in", "$b", "x"]]], ["==", "$c", "y"]]',
      {
        op: 'or',
        args: [
          {
            op: 'and',
            args: [eq('a', '1'), { op: 'not', arg: { op: 'in', key: 'b', values: ['x'] } }],
          },
          eq('c', 'y'),
        ],
      },
    ],
  ])('should parse %s', (_, input, expected) => {
    expect(parseRequirements(input)).toEqual(expected);
  });

  it('should accept nesting when exactly at the depth limit', () => {
    expect(parseRequirements(nest(MAX_DEPTH))).not.toBeNull();
  });

  it.each<[string, unknown, RegExp]>([
    ['invalid JSON', 'not json', /not valid JSON/],
    ['a JSON string', '"vcpus"', /non-empty list/],
    ['JSON null', 'null', /non-empty list/],
    ['an object', '{"a": 1}', /non-empty list/],
    ['a number', 5, /non-empty list/],
    ['a boolean', true, /non-empty list/],
    ['a key without $', '["==", "vcpus", "4"]', /start with \$/],
    ['a bare $', '["==", "$", "4"]', /start with \$/],
    ['a non-string key', '["==", 4, "4"]', /start with \$/],
    ['an unknown operator', '["~", "$vcpus", "4"]', /unknown operator "~"/],
    ['a non-string operator', '[1, "$vcpus", "4"]', /unknown operator 1/],
    ['a missing value', '["==", "$vcpus"]', /key and a value/],
    ['an extra element', '["==", "$vcpus", "4", "5"]', /key and a value/],
    ['an empty value', '["==", "$vcpus", ""]', /non-empty strings/],
    ['a null value', '["==", "$vcpus", null]', /non-empty strings/],
    ['an object value', '["==", "$a", {"x": 1}]', /non-empty strings/],
    ['a list value', '["==", "$a", ["x"]]', /non-empty strings/],
    ['a NUL in a value', '["==", "$a", "x\\u0000"]', /without NUL/],
    ['a lone surrogate in a value', '["==", "$a", "\\ud800"]', /valid Unicode/],
    ['a NUL in an "in" value', '["in", "$a", "x", "\\u0000"]', /without NUL/],
    ['an empty "and"', '["and"]', /at least one term/],
    ['an empty "or"', '["or"]', /at least one term/],
    ['a term that is not a list', '["and", "x"]', /non-empty list/],
    ['an empty term', '["and", []]', /non-empty list/],
    ['triples without "and"', '[["==", "$a", "1"], ["==", "$b", "2"]]', /unknown operator/],
    ['"not" with two terms', '["not", ["==", "$a", "1"], ["==", "$b", "2"]]', /exactly one/],
    ['"not" with no term', '["not"]', /exactly one/],
    ['"in" without values', '["in", "$a"]', /"in" needs/],
    ['"in" with an empty list', '["in", "$a", []]', /"in" needs/],
    ['"in" with an empty value', '["in", "$a", "x", ""]', /"in" needs/],
    ['"in" with a nested list', '["in", "$a", ["x"], "y"]', /"in" needs/],
    ['"in" without a key', '["in", "a", "x"]', /start with \$/],
    ['nesting past the limit', nest(MAX_DEPTH + 1), /nested deeper/],
    [
      'too many terms',
      ['and', ...Array.from({ length: MAX_NODES }, () => ['==', '$a', '1'])],
      /more than 256 terms/,
    ],
    [
      'too many "in" values',
      ['in', '$a', Array.from({ length: MAX_NODES }, (_, i) => String(i))],
      /more than 256 terms/,
    ],
  ])('should refuse %s as MalformedRequirements', (_, input, reason) => {
    const e = thrown(() => parseRequirements(input));
    expect(e.status).toBe(400);
    expect(e.errorName).toBe('MalformedRequirements');
    expect(e.message).toMatch(reason);
  });

  it('should quote the input as given when it is a string', () => {
    expect(thrown(() => parseRequirements('["and"]')).message).toBe(
      'Malformed requirements ["and"]: "and" needs at least one term',
    );
  });

  it('should quote the input as JSON when it is already decoded', () => {
    expect(thrown(() => parseRequirements(['==', 'vcpus', '4'])).message).toBe(
      'Malformed requirements ["==","vcpus","4"]: keys are strings that start with $',
    );
  });
});

describe('compileRequirements', () => {
  const columns: Record<string, ColumnSpec> = {
    vcpus: { sql: 'h.vcpus', type: 'number' },
    name: { sql: 'h.name', type: 'text' },
    reservable: { sql: 'h.reservable', type: 'boolean' },
  };
  const compile = (input: unknown, params: unknown[] = []) => {
    const sql = compileRequirements(parseRequirements(input), {
      columns,
      capabilities: 'h.caps',
      knownProperties: new Set(['gpu', 'cores', 'vcpus', "it's"]),
      params,
    });
    return { sql, params };
  };
  const cap = (n: number) => `(h.caps ->> $${n}::text)`;
  const num = (n: number) =>
    `(CASE WHEN ${cap(n)} ~ '^-?[0-9]+(\\.[0-9]+)?$' THEN ${cap(n)}::numeric END)`;

  it.each<[string, unknown, string, unknown[]]>([
    ['nothing', '', 'TRUE', []],
    ['a number column', '[">=", "$vcpus", "4"]', '(h.vcpus >= $1::numeric)', ['4']],
    ['a decimal', '["<", "$vcpus", "2.5"]', '(h.vcpus < $1::numeric)', ['2.5']],
    ['a text column', '["!=", "$name", "h1"]', '(h.name <> $1::text)', ['h1']],
    ['a boolean "true"', '["==", "$reservable", "True"]', '(h.reservable = $1::boolean)', [true]],
    ['a boolean "0"', '["!=", "$reservable", "0"]', '(h.reservable <> $1::boolean)', [false]],
    ['a text capability', '["==", "$gpu", "True"]', `(${cap(1)} = $2::text)`, ['gpu', 'True']],
    ['a numeric capability', '[">", "$cores", "9"]', `(${num(1)} > $2::numeric)`, ['cores', '9']],
    [
      'a numeric capability with "!="',
      '["!=", "$cores", "9"]',
      `(${cap(1)} IS NOT NULL AND (${num(1)} IS NULL OR ${num(1)} <> $2::numeric))`,
      ['cores', '9'],
    ],
    [
      '"in" on a number column',
      '["in", "$vcpus", "4", 8]',
      '(h.vcpus = ANY($1::numeric[]))',
      [['4', '8']],
    ],
    [
      '"in" on a boolean column',
      '["in", "$reservable", "true"]',
      '(h.reservable = ANY($1::boolean[]))',
      [[true]],
    ],
    [
      '"in" on a capability, numbers and text apart',
      '["in", "$cores", "10", "abc", "8"]',
      `(${num(1)} = ANY($2::numeric[]) OR ${cap(1)} = ANY($3::text[]))`,
      ['cores', ['10', '8'], ['abc']],
    ],
    ['"not"', '["not", ["==", "$name", "x"]]', '(NOT COALESCE((h.name = $1::text), false))', ['x']],
    [
      '"and" and "or"',
      '["and", ["==", "$name", "x"], ["or", ["<", "$vcpus", "2"], ["==", "$gpu", "y"]]]',
      `((h.name = $1::text) AND ((h.vcpus < $2::numeric) OR (${cap(3)} = $4::text)))`,
      ['x', '2', 'gpu', 'y'],
    ],
    ['a column that is also a property', '["==", "$vcpus", "4"]', '(h.vcpus = $1::numeric)', ['4']],
  ])('should compile %s', (_, input, sql, params) => {
    expect(compile(input)).toEqual({ sql, params });
  });

  it('should number placeholders after the parameters already given', () => {
    expect(compile('["==", "$name", "x"]', ['a', 'b'])).toEqual({
      sql: '(h.name = $3::text)',
      params: ['a', 'b', 'x'],
    });
  });

  it('should bind values and property names rather than write them into the SQL', () => {
    const { sql, params } = compile(`["and", ["==", "$it's", "x' OR 1=1 --"], [">", "$vcpus", 1]]`);
    expect(sql).not.toMatch(/OR 1=1|it's/);
    expect(params).toEqual(["it's", "x' OR 1=1 --", '1']);
  });

  it.each(['colour', '__proto__', 'constructor', 'hasOwnProperty'])(
    'should refuse the unknown property %s with UnknownProperty',
    (key) => {
      const e = thrown(() => compile(['==', `$${key}`, 'red']));
      expect(e.status).toBe(400);
      expect(e.errorName).toBe('UnknownProperty');
      expect(e.message).toBe(`Unknown property ${key}`);
    },
  );

  it('should refuse an unknown property inside "not" and "in"', () => {
    expect(thrown(() => compile('["not", ["in", "$colour", "red"]]')).errorName).toBe(
      'UnknownProperty',
    );
  });

  it.each<[string, string]>([
    [
      '[">", "$vcpus", "many"]',
      'Malformed requirements [">","$vcpus","many"]: $vcpus compares with numbers',
    ],
    [
      '["==", "$vcpus", "1e3"]',
      'Malformed requirements ["==","$vcpus","1e3"]: $vcpus compares with numbers',
    ],
    [
      '["in", "$vcpus", "4", "x"]',
      'Malformed requirements ["in","$vcpus","4","x"]: $vcpus compares with numbers',
    ],
    [
      '["<", "$reservable", "true"]',
      'Malformed requirements ["<","$reservable","true"]: booleans compare with == or != only',
    ],
    [
      '["==", "$reservable", "maybe"]',
      'Malformed requirements ["==","$reservable","maybe"]: $reservable compares with true or false',
    ],
  ])('should refuse %s as a type mismatch', (input, message) => {
    const e = thrown(() => compile(input));
    expect(e.errorName).toBe('MalformedRequirements');
    expect(e.message).toBe(message);
  });
});

describe('requirementKeys', () => {
  it.each<[unknown, string[]]>([
    [null, []],
    ['["==", "$a", "1"]', ['a']],
    ['["in", "$b", "x"]', ['b']],
    ['["and", ["==", "$a", "1"], ["not", ["in", "$b", "x"]], ["<", "$a", "3"]]', ['a', 'b']],
    ['["or", ["not", ["or", ["==", "$c", "1"]]], ["==", "$c", "2"]]', ['c']],
  ])('should list the keys of %s once each', (input, keys) => {
    expect(requirementKeys(parseRequirements(input))).toEqual(keys);
  });
});
