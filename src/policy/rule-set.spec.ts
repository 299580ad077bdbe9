import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Credentials } from './check.js';
import { parsePolicyText } from './policy-file.js';
import { RuleSet } from './rule-set.js';
import { policySample } from './sample.js';
import { DEFAULT_RULES } from './default-rules.js';

function caller(roles: string[], project = 'p1', user = 'u1'): Credentials {
  return { user_id: user, project_id: project, roles, is_admin: false };
}
const own = { project_id: 'p1', user_id: 'u1' };
const other = { project_id: 'p2', user_id: 'u2' };

describe('RuleSet with the defaults', () => {
  const { rules, problems } = RuleSet.build();
  it('should build without problems', () => expect(problems).toEqual([]));

  it.each<[string, string[], Record<string, string>, boolean]>([
    ['blazar:leases:get', ['reader'], own, true],
    ['blazar:leases:get', ['reader'], other, false],
    ['blazar:leases:get', [], own, false],
    ['blazar:leases:get', ['admin'], other, true],
    ['blazar:leases:post', ['reader'], own, false],
    ['blazar:leases:post', ['member'], own, true],
    ['blazar:leases:delete', ['member'], other, false],
    ['blazar:oshosts:get', ['member'], own, false],
    ['blazar:oshosts:get', ['admin'], own, true],
    ['blazar:floatingips:get', ['reader'], own, true],
    ['blazar:floatingips:post', ['member'], own, false],
    ['climate:availability:get', ['reader'], own, true],
    ['climate:instances:availability:get', ['reader'], own, true],
    ['climate:instances:availability:get', [], own, false],
    ['climate:capacity:get', ['_member_'], own, false],
    ['climate:scheduler:filter', ['member'], own, false],
    ['no:such:rule', ['admin'], own, false],
  ])('should decide %s for roles %j on %j: %s', (name, roles, target, expected) => {
    expect(rules.allows(name, target, caller(roles))).toBe(expected);
  });
});

describe('RuleSet with overrides', () => {
  it('should take an override of a rule and of a base rule', () => {
    const { rules, problems } = RuleSet.build([
      { name: 'blazar:leases:delete', check: 'rule:admin or user_id:%(user_id)s', where: null },
      {
        name: 'project_reader_api',
        check: 'role:viewer and project_id:%(project_id)s',
        where: null,
      },
    ]);
    expect(problems).toEqual([]);
    expect(rules.allows('blazar:leases:delete', own, caller(['member']))).toBe(true);
    expect(rules.allows('blazar:leases:delete', other, caller(['member'], 'p2'))).toBe(false);
    expect(rules.allows('blazar:leases:get', own, caller(['viewer']))).toBe(true);
    expect(rules.allows('blazar:leases:get', own, caller(['reader']))).toBe(false);
  });

  it.each([
    ['blazar:leases:get', 'role:reader or', 'does not parse: ends where a check was expected'],
    ['blazar:leases:get', 'rule:nobody', 'rule:nobody names no rule'],
    ['blazar:lease:get', '@', 'no such rule'],
    ['climate:pool:get', '@', 'no such rule'],
  ])('should report %s: %j with its line', (name, check, reason) => {
    const text = `# site rules\n"${name}": "${check}"\n`;
    const read = parsePolicyText(text, 'policy.yaml');
    const { problems } = RuleSet.build(read.overrides);
    expect([...read.problems, ...problems]).toEqual([
      expect.stringMatching(new RegExp(`^POLICY_FILE policy.yaml:2: .*${escape(reason)}`)),
    ]);
  });

  it('should report every problem at once, and a loop of rules', () => {
    const read = parsePolicyText(
      'a: "rule:b"\nb: "rule:a"\n"blazar:leases:get": "("\n"blazar:leases:post": "@"\n',
      'p.yaml',
    );
    const { problems } = RuleSet.build(read.overrides);
    expect(problems).toEqual([
      expect.stringContaining('p.yaml:3: blazar:leases:get'),
      expect.stringContaining('p.yaml:1: a: rules refer to each other in a loop (a -> b -> a)'),
    ]);
  });

  it.each([
    ['[1, 2]', 'must be a mapping'],
    ['a: [1]', 'the check must be a string'],
    ['a: "x"\na: "y"', 'POLICY_FILE f:2'],
    ['a: "unclosed', 'POLICY_FILE f:1'],
  ])('should refuse a file %j', (text, reason) => {
    expect(parsePolicyText(text, 'f').problems).toEqual([expect.stringContaining(reason)]);
  });

  it('should read JSON and an empty file', () => {
    const json = parsePolicyText('{\n  "blazar:oshosts:get": "role:member"\n}', 'p.json');
    expect(json).toEqual({
      overrides: [
        { name: 'blazar:oshosts:get', check: 'role:member', where: 'POLICY_FILE p.json:2' },
      ],
      problems: [],
    });
    expect(parsePolicyText('# nothing\n', 'p.yaml')).toEqual({ overrides: [], problems: [] });
  });
});

describe('policySample', () => {
  it('should read back as the defaults once uncommented', () => {
    const sample = policySample();
    const uncommented = sample.replace(/^#"/gm, '"');
    const read = parsePolicyText(uncommented, 'sample');
    expect(read.problems).toEqual([]);
    expect(read.overrides.map((o) => [o.name, o.check])).toEqual(
      DEFAULT_RULES.map((d) => [d.name, d.check]),
    );
    expect(sample).toContain('# GET    /v1/leases/{id}');
  });

  it('should match docs/policy.yaml.sample (else run npm run policy:sample)', () => {
    const committed = readFileSync(join(__dirname, '../../docs/policy.yaml.sample'), 'utf8');
    expect(committed).toBe(policySample());
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
