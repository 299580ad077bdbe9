import { InvalidInput } from '../common/errors.js';
import {
  compileRequirements,
  parseRequirements,
  requirementKeys,
  type Requirement,
} from './requirements.js';

describe('parseRequirements', () => {
  it.each([
    ['', null],
    ['[]', null],
    [[], null],
    [null, null],
    ['["==", "$vcpus", "4"]', { op: '==', key: 'vcpus', value: '4' }],
    ['["=", "$gpu", "True"]', { op: '==', key: 'gpu', value: 'True' }],
    [['>=', '$memory_mb', 4096], { op: '>=', key: 'memory_mb', value: '4096' }],
    [
      '["and", ["==", "$a", "1"], ["!=", "$b", "x"]]',
      {
        op: 'and',
        args: [
          { op: '==', key: 'a', value: '1' },
          { op: '!=', key: 'b', value: 'x' },
        ],
      },
    ],
    ['["or", ["<", "$a", "1"]]', { op: 'or', args: [{ op: '<', key: 'a', value: '1' }] }],
    ['["not", ["==", "$a", "1"]]', { op: 'not', arg: { op: '==', key: 'a', value: '1' } }],
    ['["in", "$rack", "r1", "r2"]', { op: 'in', key: 'rack', values: ['r1', 'r2'] }],
    ['["in", "$rack", ["r1"]]', { op: 'in', key: 'rack', values: ['r1'] }],
  ] as [unknown, Requirement | null][])('should parse %j', (input, expected) => {
    expect(parseRequirements(input)).toEqual(expected);
  });

  it.each([
    'not json',
    '["==", "vcpus", "4"]',
    '["~", "$vcpus", "4"]',
    '["==", "$vcpus"]',
    '["==", "$vcpus", ""]',
    '["and"]',
    '[["==", "$a", "1"], ["==", "$b", "2"]]',
    '["not", ["==", "$a", "1"], ["==", "$b", "2"]]',
    '["in", "$a"]',
    '{"a": 1}',
    '["==", "$a", {"x": 1}]',
    JSON.stringify(
      Array.from({ length: 20 }).reduce<unknown>((acc) => ['not', acc], ['==', '$a', '1']),
    ),
  ])('should refuse %s as malformed', (input) => {
    expect(() => parseRequirements(input)).toThrow(InvalidInput);
    expect(() => parseRequirements(input)).toThrow(/^Malformed requirements /);
  });
});

describe('compileRequirements', () => {
  const columns = {
    vcpus: { sql: 'h.vcpus', type: 'number' },
    name: { sql: 'h.name', type: 'text' },
    reservable: { sql: 'h.reservable', type: 'boolean' },
  } as const;
  const compile = (input: unknown, known: string[] = ['gpu']) => {
    const params: unknown[] = [];
    const sql = compileRequirements(parseRequirements(input), {
      columns,
      capabilities: 'h.caps',
      knownProperties: new Set(known),
      params,
    });
    return { sql, params };
  };

  it('should compile nothing to TRUE', () => {
    expect(compile('')).toEqual({ sql: 'TRUE', params: [] });
  });

  it('should bind every value and key as a parameter', () => {
    const { sql, params } = compile(
      `["and", [">=", "$vcpus", "4"], ["==", "$gpu", "x' OR 1=1 --"]]`,
    );
    expect(sql).not.toContain('OR 1=1');
    expect(params).toEqual([4, 'gpu', "x' OR 1=1 --"]);
  });

  it('should refuse an unknown property with UnknownProperty', () => {
    expect(() => compile('["==", "$colour", "red"]')).toThrow('Unknown property colour');
  });

  it.each([
    '[">", "$vcpus", "many"]',
    '["<", "$reservable", "true"]',
    '["==", "$reservable", "maybe"]',
  ])('should refuse %s as a type mismatch', (input) => {
    expect(() => compile(input)).toThrow(/^Malformed requirements /);
  });

  it('should list the keys a requirement uses', () => {
    expect(
      requirementKeys(
        parseRequirements(
          '["and", ["==", "$a", "1"], ["not", ["in", "$b", "x"]], ["<", "$a", "3"]]',
        ),
      ),
    ).toEqual(['a', 'b']);
    expect(requirementKeys(null)).toEqual([]);
  });
});
